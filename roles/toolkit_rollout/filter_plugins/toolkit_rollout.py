# -*- coding: utf-8 -*-
"""Filter of the toolkit_rollout role: whether a container's requests are the ones wanted, by value.

The API stores a quantity in its canonical form (``0.5`` comes back as ``500m``, ``2000`` as ``2k``,
``1024Mi`` as ``1Gi``): the role's "already updated?" decision compares values, not strings, so that
a re-run with the same inputs is recognised and a changed one is applied. The parsing is gpuop's one
quantity parser (module_utils/gpuop/quantity.py), imported from the module_utils folders the Ansible
configuration names (ansible.cfg `module_utils`), as a module run would import it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ansible.module_utils
from ansible import constants as C

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils.gpuop.quantity import same_requests  # noqa: E402  (after the path above)


class FilterModule(object):
    """toolkit_rollout_same_requests."""

    def filters(self):
        return {"toolkit_rollout_same_requests": same_requests}
