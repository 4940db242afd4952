# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Kubernetes name patterns, one definition for every module (no heavy import: pure modules use it too).

A namespace, a node's label value part, a runtime handler are DNS labels; most object names and the
prefix of an extended resource are DNS subdomains (RFC 1123, lower case). ``\\Z``: no trailing newline.
"""

import re

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError

DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + "(\\." + DNS1123_LABEL + ")*"
DNS1123_LABEL_RE = re.compile("^" + DNS1123_LABEL + "\\Z")
DNS1123_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN + "\\Z")
# A containerd runtime (a CRI handler) name: letters, digits, '.', '_', '-', starting with a letter or
# digit. It names a TOML table, a RuntimeClass's handler and a line of merge.txt (no comma, no space).
RUNTIME_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# The name part of a qualified name (an extended resource's part after the '/').
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")


def validate_resource_name(name):
    """Return ``name`` if the API would accept it as an extended resource name, else raise.

    The API's rule (``IsExtendedResourceName``): it has a domain (``/``), the domain is not
    ``kubernetes.io`` (native resources), it does not start with ``requests.``, and
    ``requests.<name>`` is a qualified name (DNS-1123 subdomain prefix, name part ≤ 63).
    """
    if not isinstance(name, str) or not name:
        raise GpuopError("resource must be a non-empty extended resource name such as nvidia.com/gpu, got %r" % (name,))
    if "/" not in name:
        raise GpuopError("resource %r is not an extended resource name: it needs a domain prefix, "
                         "e.g. nvidia.com/gpu (a name without a domain is a native resource such as cpu)" % name)
    if "kubernetes.io/" in name:
        raise GpuopError("resource %r is not an extended resource name: the kubernetes.io domain is reserved "
                         "for native resources; use your own domain, e.g. nvidia.com/gpu" % name)
    if name.startswith("requests."):
        raise GpuopError("resource %r is not an extended resource name: the requests. prefix is reserved for quota" % name)
    prefix, _slash, local = ("requests." + name).partition("/")
    problems = []
    if "/" in local:
        problems.append("it has more than one '/'")
    if len(prefix) > 253 or not DNS1123_SUBDOMAIN_RE.match(prefix):
        problems.append("its domain %r must be a lowercase DNS subdomain (a-z, 0-9, '-', '.')" % prefix[len("requests."):])
    if not local or len(local) > 63 or not _QUALIFIED_NAME_RE.match(local):
        problems.append("its name part %r must be 1-63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                        "starting and ending with a letter or digit" % local)
    if problems:
        raise GpuopError("resource %r is not an extended resource name: %s" % (name, "; ".join(problems)))
    return name
