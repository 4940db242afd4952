"""A small raw-HTTPS Kubernetes client for the benchmark's own bookkeeping (not the project's code).

Reads a kwok kubeconfig (client certificate files or embedded data), sends JSON requests, and
streams watches. Used by run.py (watching the conditions the playbook waits for) and scale.py
(bulk node creation, rollout set-up, apiserver metrics). Standard library plus PyYAML.
"""

import base64
import http.client
import json
import os
import ssl
import tempfile
import threading
import time
import urllib.parse

import yaml


class Api(object):
    def __init__(self, kubeconfig, timeout=30.0):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        ctx_name = cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        url = urllib.parse.urlparse(cluster["server"])
        self.host, self.port = url.hostname, url.port or 443
        self.timeout = timeout
        self._tmp = []
        ctx_ssl = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        ctx_ssl.check_hostname = False
        ctx_ssl.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))
        self.ssl = ctx_ssl
        self._local = threading.local()

    def _file(self, section, key):
        if section.get(key):
            return section[key]
        data = section.get(key + "-data")
        if not data:
            return None
        fd, path = tempfile.mkstemp(prefix="bench-k8s-")
        os.write(fd, base64.b64decode(data))
        os.close(fd)
        self._tmp.append(path)
        return path

    def close(self):
        for path in self._tmp:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def request(self, method, path, body=None, query=None, content_type="application/json", raw=False):
        if query:
            path += "?" + urllib.parse.urlencode(query)
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        if resp.status >= 400:
            raise ApiError(resp.status, "%s %s: HTTP %s %s" % (method, path, resp.status, payload[:300]))
        if raw:
            return payload
        return json.loads(payload) if payload else {}

    def get(self, path, query=None):
        return self.request("GET", path, query=query)

    def metrics_text(self):
        return self.request("GET", "/metrics", raw=True).decode()

    def watch(self, path, on_event, stop, query=None):
        """Stream ``path?watch=1`` and call ``on_event(type, obj, t_received)`` until ``stop`` is set.

        Blocking reads; ``Watcher.stop`` shuts the socket down to end them. Re-opens the stream
        (from the last resourceVersion) when the server closes it.
        """
        rv = None
        holder = {}
        while not stop.is_set():
            q = dict(query or {})
            q.update({"watch": "1", "timeoutSeconds": "600", "allowWatchBookmarks": "false"})
            if rv:
                q["resourceVersion"] = rv
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=self.timeout)
            try:
                conn.request("GET", path + "?" + urllib.parse.urlencode(q), headers={"Accept": "application/json"})
                resp = conn.getresponse()
                if resp.status >= 400:
                    raise ApiError(resp.status, "watch %s: HTTP %s" % (path, resp.status))
                conn.sock.settimeout(None)
                stop.conns.append(conn)
                buf = b""
                while not stop.is_set():
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    t = time.time()
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            rv = None
                            continue
                        rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                        on_event(event.get("type"), obj, t)
            except (http.client.HTTPException, OSError, ValueError, ApiError):
                if stop.wait(0.2):
                    break
            finally:
                conn.close()


class StopFlag(threading.Event):
    """An Event that also shuts down the watch sockets it was given, to end blocking reads."""

    def __init__(self):
        threading.Event.__init__(self)
        self.conns = []

    def set(self):
        threading.Event.set(self)
        for conn in list(self.conns):
            try:
                conn.sock.shutdown(2)
            except (OSError, AttributeError):
                pass


class ApiError(Exception):
    def __init__(self, status, msg):
        Exception.__init__(self, msg)
        self.status = status


def request_totals(metrics_text, verbs=("GET", "LIST")):
    """Sum ``apiserver_request_total`` per (verb, resource, subresource) for the given verbs."""
    totals = {}
    for line in metrics_text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        labels = {}
        for part in _split_labels(labels_text):
            key, _, val = part.partition("=")
            labels[key] = val.strip('"')
        if labels.get("verb") not in verbs:
            continue
        key = (labels.get("verb"), labels.get("resource", ""), labels.get("subresource", ""))
        totals[key] = totals.get(key, 0) + float(value)
    return totals


def _split_labels(text):
    parts, cur, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts


def diff_totals(before, after):
    out = {}
    for key, value in after.items():
        delta = value - before.get(key, 0)
        if delta:
            out["%s %s%s" % (key[0], key[1], "/" + key[2] if key[2] else "")] = int(delta)
    return out
