# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Talking to a cluster: one client per module run, raw JSON in and out, bounded waits.

Raw JSON (``_preload_content=False``) instead of the client's model objects: decoding a
thousand pods into models costs seconds, a JSON parse costs milliseconds.
"""

import json
import math
import os
import time

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

try:
    from urllib.parse import urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported, the name keeps pylint quiet
    from urllib import urlencode

try:
    # Only the kubernetes package's public API: its kubeconfig loader fills a Configuration (server,
    # CA, client certificate, token, exec/auth-provider refresh hook, proxy). Requests go out through
    # urllib3 (a dependency of kubernetes) directly: the ApiClient's request methods changed shape
    # between client generations (param_serialize exists only from kubernetes 35 on).
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    import urllib3
    from urllib3 import exceptions as urllib3_exceptions
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the module shell
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

# The kubernetes package versions gpuop supports (requirements.txt); tests run the lowest and the pinned one.
KUBERNETES_REQUIREMENT = "kubernetes>=24.2.0"

# Shared options of every module that talks to a cluster (deep-copied by each module).
K8S_ARG_SPEC = {
    "kubeconfig": {"type": "path", "required": True},
    "context": {"type": "str"},
    "request_timeout": {"type": "float", "default": 10.0},
}

MANAGED_BY_KWOK_ANNOTATION = "kwok.x-k8s.io/node"
POLL_INTERVAL = 0.2
# Items per LIST page (limit / continue): a 1,000-node cluster answers in two pages.
PAGE_SIZE = 500


class NotFound(GpuopError):
    """The API answered 404."""


def _pool_manager(configuration):
    """A urllib3 pool for ``configuration`` (TLS as the kubeconfig says, its proxy if any).

    One attempt per request, bounded by request_timeout: urllib3's default 3 retries made a request to
    an API server that hangs (etcd down) take 4 x request_timeout, past any wait's bound. Waits poll
    again on their own.
    """
    kwargs = {"num_pools": 4, "maxsize": 4, "retries": False}
    if configuration.verify_ssl:
        kwargs["cert_reqs"] = "CERT_REQUIRED"
        if configuration.ssl_ca_cert:
            kwargs["ca_certs"] = configuration.ssl_ca_cert
    else:
        kwargs["cert_reqs"] = "CERT_NONE"
    if configuration.cert_file:
        kwargs["cert_file"] = configuration.cert_file
    if configuration.key_file:
        kwargs["key_file"] = configuration.key_file
    assert_hostname = getattr(configuration, "assert_hostname", None)
    if assert_hostname is not None:
        kwargs["assert_hostname"] = assert_hostname
    tls_server_name = getattr(configuration, "tls_server_name", None)
    if tls_server_name:
        kwargs["server_hostname"] = tls_server_name
    if configuration.proxy:
        return urllib3.ProxyManager(configuration.proxy, proxy_headers=getattr(configuration, "proxy_headers", None),
                                    **kwargs)
    return urllib3.PoolManager(**kwargs)


class Cluster(object):
    """A thin raw-JSON client: the kubernetes package's kubeconfig loader, then urllib3."""

    def __init__(self, kubeconfig, context=None, request_timeout=10.0):
        if not HAS_KUBERNETES:
            raise GpuopError("the python 'kubernetes' package is missing (gpuop needs %s): %s"
                             % (KUBERNETES_REQUIREMENT, KUBERNETES_IMPORT_ERROR))
        if not os.path.isfile(kubeconfig):
            raise GpuopError("kubeconfig %s does not exist" % kubeconfig)
        try:
            configuration = k8s_client.Configuration()
            # persist_config=False: never write the file (a token refresh would rewrite it).
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                        persist_config=False)
            self.pool = _pool_manager(configuration)
        except Exception as exc:  # the loader raises several unrelated types
            raise GpuopError("kubeconfig %s cannot be used: %s" % (kubeconfig, exc))
        self.configuration = configuration
        self.kubeconfig = kubeconfig
        self.host = configuration.host.rstrip("/")
        self.timeout = request_timeout
        self.calls = []

    def request(self, method, path, body=None, query=None, content_type=None):
        """Send one request; return the decoded JSON body. 404 raises NotFound.

        ``body`` is sent as it is when it is a string, else encoded as JSON. HTTP 429 ("storage is
        (re)initializing" right after a CRD is created, or API priority and fairness shedding load)
        means the request was not processed: it is sent again every POLL_INTERVAL for at most
        request_timeout seconds, then fails with the server's message.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._request_once(method, path, body, query, content_type)
            except GpuopError as exc:
                if exc.details.get("status") != 429 or time.monotonic() >= deadline:
                    raise
                time.sleep(min(POLL_INTERVAL, max(0.0, deadline - time.monotonic())))

    def _headers(self, content_type, has_body):
        headers = {"Accept": "application/json", "User-Agent": "gpuop"}
        if content_type or has_body:
            headers["Content-Type"] = content_type or "application/json"
        # The token as the kubeconfig gives it (an exec or auth-provider plugin refreshes it here).
        token = self.configuration.get_api_key_with_prefix("authorization")
        if token:
            headers["Authorization"] = token
        elif self.configuration.username and self.configuration.password:
            headers.update(urllib3.util.make_headers(
                basic_auth="%s:%s" % (self.configuration.username, self.configuration.password)))
        return headers

    def _request_once(self, method, path, body, query, content_type):
        headers = self._headers(content_type, body is not None)
        self.calls.append("%s %s" % (method, path))
        url = self.host + path
        if query:
            url += "?" + urlencode(list(query.items()))
        if body is not None and not isinstance(body, (str, bytes)):
            body = json.dumps(body)
        try:
            response = self.pool.request(method, url, body=body, headers=headers, preload_content=False,
                                         timeout=urllib3.Timeout(total=self.timeout), redirect=False)
            raw = response.read()
            response.release_conn()
        except (OSError, urllib3_exceptions.HTTPError) as exc:
            raise GpuopError("cannot reach the API server at %s (%s %s): %s" % (self.host, method, path, _short(exc)))
        if response.status >= 400:
            detail = _api_message(raw, response.reason)
            if response.status == 404:
                raise NotFound("%s %s: not found (%s)" % (method, path, detail))
            raise GpuopError("%s %s failed: HTTP %s: %s" % (method, path, response.status, detail),
                             status=response.status)
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:  # /readyz and friends answer plain text
            return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw

    def get(self, path, query=None):
        return self.request("GET", path, query=query)

    def get_or_none(self, path):
        try:
            return self.get(path)
        except NotFound:
            return None

    def list(self, path, label_selector=None, field_selector=None, limit=PAGE_SIZE):
        """Every item of a LIST, read in pages of ``limit`` (``continue`` tokens), so that a big cluster is never
        asked for everything in one answer. An expired token (410) fails with the server's message."""
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        if limit:
            query["limit"] = str(limit)
        items = []
        while True:
            answer = self.get(path, query=query)
            items.extend(answer.get("items", []))
            token = (answer.get("metadata") or {}).get("continue") if limit else None
            if not token:
                return items
            query = dict(query, **{"continue": token})

    def patch(self, path, body, patch_type="merge", dry_run=False):
        types = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }
        query = {"dryRun": "All"} if dry_run else None
        return self.request("PATCH", path, body=body, query=query, content_type=types[patch_type])

    def server_version(self):
        return self.get("/version")


def _short(exc):
    text = str(exc)
    reason = getattr(exc, "reason", None)
    if reason is not None:
        text = str(reason)
    return text.splitlines()[0][:300] if text else exc.__class__.__name__


def _api_message(raw, reason):
    try:
        return json.loads(raw).get("message", reason)
    except (TypeError, ValueError, AttributeError):
        return reason


def node_path(name):
    return "/api/v1/nodes/%s" % name


def is_kwok_managed(node):
    """kwok manages nodes annotated ``kwok.x-k8s.io/node: fake`` (and kwokctl's controller runs with manage-all-nodes).

    We only trust the annotation: a node without it belongs to a real kubelet.
    """
    annotations = node.get("metadata", {}).get("annotations") or {}
    return annotations.get(MANAGED_BY_KWOK_ANNOTATION) == "fake"


def wait_for(fetch, predicate, timeout, what, describe=None, interval=POLL_INTERVAL, clock=time.monotonic, sleep=time.sleep):
    """Poll ``fetch()`` every ``interval`` (≤ 0.5 s) until ``predicate(state)`` holds.

    Returns ``(state, elapsed_seconds)``. API errors while waiting are remembered and the wait
    goes on; on timeout raises GpuopError naming ``what`` and the last state (``describe(state)``)
    or the last error seen.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout < 0:
        # nan would never time out, inf never end: a wait is always bounded.
        raise GpuopError("the wait for %s needs a timeout of 0 or more seconds, got %r" % (what, timeout))
    start = clock()
    last_state = None
    last_error = None
    seen = False
    while True:
        try:
            last_state = fetch()
            seen = True
            last_error = None
            if predicate(last_state):
                return last_state, round(clock() - start, 3)
        except GpuopError as exc:
            last_error = exc.msg
        elapsed = clock() - start
        if elapsed >= timeout:
            state = (describe(last_state) if describe else json.dumps(last_state, sort_keys=True)[:800]) if seen else None
            if last_error:
                saw = "last error: %s" % last_error
                if seen:
                    saw += "; last state seen: %s" % state
            elif not seen:
                saw = "nothing was observed"
            else:
                saw = "last state: %s" % state
            raise GpuopError("timed out after %.1fs waiting for %s; %s" % (elapsed, what, saw))
        sleep(min(interval, max(0.0, timeout - elapsed)))
