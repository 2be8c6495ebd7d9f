#!/usr/bin/env bash
# A CA, a server certificate for 127.0.0.1/localhost and a client certificate (CN=app,O=Example),
# as PEM files in the directory given (default: ./certs). Needs openssl.
set -euo pipefail
dir=${1:-certs}
mkdir -p "$dir" && cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=test-ca" \
    -keyout ca.key -out ca.pem 2>/dev/null
for who in server client; do
    if [ "$who" = server ]; then subject="/CN=localhost"; else subject="/O=Example/CN=app"; fi
    openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$who.key" -out "$who.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$who.ext"
    openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$who.ext" -out "$who.pem" 2>/dev/null
done
echo "$PWD: ca.pem server.pem server.key client.pem client.key"
