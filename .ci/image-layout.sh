#!/usr/bin/env bash
# What the Dockerfile's final stage holds, assembled without a container engine: the production
# packages (no install scripts, the runtime patches applied), dist/ and functions/bin. The server
# started from it on the embedded database must pass the image's HEALTHCHECK.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$root"' EXIT
mkdir -p "$root/db/patches" "$root/functions"
cp package.json package-lock.json "$root/"
cp db/patches/postgres+*.patch db/patches/ssh2+*.patch "$root/db/patches/"
(cd "$root" && npm ci --omit=dev --no-audit --no-fund --ignore-scripts --silent \
  && npx patch-package --patch-dir db/patches --error-on-fail >/dev/null)
cp -r dist "$root/dist"
cp -r functions/bin "$root/functions/bin"
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
(cd "$root" && HOST=127.0.0.1 PORT=$port ECPDS_DATA_DIR="$root/data" ECPDS_DEMO=0 NODE_ENV=production \
  ECPDS_PORTAL_SFTP_PORT=0 ECPDS_PORTAL_S3_PORT=0 exec node functions/bin/ecpds-edge.mjs serve >"$root/server.log" 2>&1) &
server=$!
for _ in $(seq 1 60); do
  if (cd "$root" && PORT=$port node functions/bin/healthcheck.mjs); then
    echo "the image's layout serves, and passes its health check on port $port"
    exit 0
  fi
  sleep 1
done
echo 'the server assembled as the image is did not pass its health check; its log:' >&2
tail -n 20 "$root/server.log" >&2
exit 1
