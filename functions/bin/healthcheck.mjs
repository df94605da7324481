#!/usr/bin/env node
// The container's HEALTHCHECK: /healthz of the server in this container, on its own port. Its
// certificate is the server's (often self-signed), which a probe on loopback has no reason to verify.
import http from 'node:http';
import https from 'node:https';

const secure = !['1', 'true', 'yes', 'on'].includes(process.env.ECPDS_TRUST_PROXY ?? '');
const request = (secure ? https : http).get(
  {
    host: '127.0.0.1',
    port: Number(process.env.PORT ?? 8443),
    path: '/healthz',
    rejectUnauthorized: false,
    timeout: 4000,
  },
  (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  },
);
request.on('timeout', () => request.destroy(new Error('timed out')));
request.on('error', () => process.exit(1));
