# A test upstream HTTP proxy that demands Basic credentials (407 without)
# and logs one JSON line per request: method, target, the username it got
# and whether the credentials matched. The expected value comes from the
# environment (UPSTREAM_AUTH, base64 of user:password), never argv.
import base64, json, os, select, socket, sys, threading
import http.client
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PORT = int(sys.argv[1])
LOG = sys.argv[2]
EXPECTED = "Basic " + os.environ["UPSTREAM_AUTH"]
lock = threading.Lock()


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def authorised(self):
        got = self.headers.get("Proxy-Authorization")
        user = None
        if got and got.startswith("Basic "):
            try:
                user = base64.b64decode(got[6:]).decode().split(":", 1)[0]
            except Exception:
                user = "?"
        ok = got == EXPECTED
        with lock, open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "target": self.path, "user": user, "ok": ok}) + "\n")
        if not ok:
            # Drop the connection after answering: a request body left unread must not read as the next request.
            self.close_connection = True
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
        return ok

    def do_CONNECT(self):
        if not self.authorised():
            return
        host, port = self.path.rsplit(":", 1)
        try:
            up = socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200, "Connection Established")
        self.end_headers()
        self.close_connection = True
        conns = [self.connection, up]
        try:
            while True:
                readable, _, _ = select.select(conns, [], [], 30)
                if not readable:
                    break
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (up if s is self.connection else self.connection).sendall(data)
        finally:
            up.close()

    def forward(self):
        if not self.authorised():
            return
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if not k.lower().startswith("proxy-") and k.lower() != "connection"}
        try:
            conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
            conn.request(self.command, (url.path or "/") + ("?" + url.query if url.query else ""), body, headers)
            answer = conn.getresponse()
            data = answer.read()
        except OSError:
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(answer.status, answer.reason)
        for k, v in answer.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = forward


ThreadingHTTPServer(("127.0.0.1", PORT), Proxy).serve_forever()
