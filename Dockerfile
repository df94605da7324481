# The Node server, its command line and its movers, from the compiled dist/ (docs/deploy.md#containers).
#   docker build -t ecpds-edge .
#   docker run -p 8443:8443 -v ecpds-data:/data ecpds-edge
# Packages' install scripts are not run: the one the service needs is its postgres.js patch, applied
# by patch-package; ssh2 runs without its optional native binding.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY db/patches db/patches
RUN npm ci --no-audit --no-fund --ignore-scripts && npx patch-package --patch-dir db/patches --error-on-fail
COPY . .
RUN node functions/build.mjs

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# The patches of the packages it runs with (the others patch development tools).
COPY db/patches/postgres+*.patch db/patches/ssh2+*.patch db/patches/
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
  && npx patch-package --patch-dir db/patches --error-on-fail \
  && npm cache clean --force
COPY --from=build /app/dist dist
COPY functions/bin functions/bin
RUN mkdir /data && chown node:node /data
USER node
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8443 ECPDS_DATA_DIR=/data ECPDS_DEMO=0
VOLUME /data
# HTTPS (the API, the console, the portal), the portal's SFTP and S3 listeners.
EXPOSE 8443 2222 9443
# /healthz over HTTPS on the server's own certificate, or plain HTTP behind a proxy (ECPDS_TRUST_PROXY=1).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["node", "functions/bin/healthcheck.mjs"]
ENTRYPOINT ["node", "functions/bin/ecpds-edge.mjs"]
CMD ["serve"]
