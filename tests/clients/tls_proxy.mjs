/**
 * tls_proxy.mjs: TLS in front of a plain ikd, for the clients' TLS tests
 * (ikd speaks plain HTTP and WebSocket; a deployment terminates TLS in
 * front of it, as this does).
 *
 * certs(dir) writes a throw-away CA and a certificate for 127.0.0.1 signed
 * by it (tests/clients/tls_certs.sh) and returns their PEM texts;
 * tlsProxy(port, {key, cert}) listens on a free loopback port, forwards
 * every TLS connection's bytes to 127.0.0.1:port and resolves to
 * {base: "https://127.0.0.1:P", close()}.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createServer } from 'node:tls';

export function certs(dir) {
  execFileSync('sh', ['tests/clients/tls_certs.sh', dir]);
  const read = (f) => readFileSync(`${dir}/${f}`, 'utf8');
  return { ca: read('ca.pem'), otherCa: read('other-ca.pem'), key: read('key.pem'), cert: read('cert.pem') };
}

export function tlsProxy(port, { key, cert }) {
  const sockets = new Set();
  const server = createServer({ key, cert }, (tls) => {
    const up = connect(port, '127.0.0.1');
    sockets.add(tls);
    sockets.add(up);
    tls.pipe(up);
    up.pipe(tls);
    const end = () => { tls.destroy(); up.destroy(); sockets.delete(tls); sockets.delete(up); };
    tls.on('error', end);
    up.on('error', end);
    tls.on('close', end);
    up.on('close', end);
  });
  server.on('tlsClientError', () => {});
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({
      base: `https://127.0.0.1:${server.address().port}`,
      close: () => new Promise((ok) => { for (const s of sockets) s.destroy(); server.close(ok); }),
    }));
  });
}
