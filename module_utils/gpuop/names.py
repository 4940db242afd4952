# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Kubernetes name patterns, one definition for every module (no heavy import: pure modules use it too).

A namespace, a node's label value part, a runtime handler are DNS labels; most object names and the
prefix of an extended resource are DNS subdomains (RFC 1123, lower case). ``\\Z``: no trailing newline.
"""

import re

DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + "(\\." + DNS1123_LABEL + ")*"
DNS1123_LABEL_RE = re.compile("^" + DNS1123_LABEL + "\\Z")
DNS1123_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN + "\\Z")
# A containerd runtime (a CRI handler) name: letters, digits, '.', '_', '-', starting with a letter or
# digit. It names a TOML table, a RuntimeClass's handler and a line of merge.txt (no comma, no space).
RUNTIME_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
