#!/bin/sh
# tls_certs.sh DIR: a throw-away certificate authority and a certificate
# for 127.0.0.1 and localhost signed by it, for the clients' TLS tests
# (ikd itself speaks plain HTTP; the tests put a TLS proxy in front of it).
# Writes DIR/ca.pem (the CA to trust), DIR/key.pem and DIR/cert.pem (the
# proxy's), and DIR/other-ca.pem (a CA that signed nothing: trusting it
# must fail). Needs openssl. Valid for one day.
set -eu
d=$1
mkdir -p "$d"
cd "$d"
for ca in ca other-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj "/CN=ikd test $ca" -keyout "$ca-key.pem" -out "$ca.pem" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        2>/dev/null
done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout key.pem -out cert.csr 2>/dev/null
printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
    'keyUsage=critical,digitalSignature' 'extendedKeyUsage=serverAuth' > ext.cnf
openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 \
    -extfile ext.cnf -out cert.pem 2>/dev/null
rm -f cert.csr ext.cnf ca.srl
