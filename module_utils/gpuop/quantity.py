# Copyright: (c) 2026, gpuop contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Kubernetes quantities (``64Gi``, ``500m``, ``1e3``, ``4``) as exact Fractions: the one parser of gpuop.

Used by the modules (through their module_utils) and, on the controller, by the toolkit_rollout
role's filter (which puts module_utils on the import path the way Ansible's configuration names it).
"""

import re
from fractions import Fraction

# A Kubernetes quantity as the API serializes it: number, then a binary/decimal SI suffix or exponent.
QUANTITY_RE = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?\Z")
SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000),
    "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9),
    "T": Fraction(10 ** 12), "P": Fraction(10 ** 15), "E": Fraction(10 ** 18),
    "Ki": Fraction(2 ** 10), "Mi": Fraction(2 ** 20), "Gi": Fraction(2 ** 30),
    "Ti": Fraction(2 ** 40), "Pi": Fraction(2 ** 50), "Ei": Fraction(2 ** 60),
}


def parse_quantity(value):
    """``value`` (a quantity string, or an integer) as an exact Fraction; None when it is not a quantity."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    match = QUANTITY_RE.match(str(value).strip())
    if not match:
        return None
    sign, number, suffix = match.groups()
    suffix = suffix or ""
    amount = Fraction(number)
    if suffix[:1] in ("e", "E"):
        amount *= Fraction(10) ** int(suffix[1:])
    else:
        amount *= SUFFIX[suffix]
    return -amount if sign == "-" else amount


def same_requests(current, wanted):
    """Whether ``current`` (requests as the API stores them) holds exactly the resources of ``wanted``,
    each of the same value (``500m`` is ``0.5``); a value that is not a quantity is compared as text."""
    current = current or {}
    wanted = wanted or {}
    if sorted(str(key) for key in current) != sorted(str(key) for key in wanted):
        return False
    for key, value in wanted.items():
        have, want = parse_quantity(current[key]), parse_quantity(value)
        if have is None or want is None:
            if str(current[key]) != str(value):
                return False
        elif have != want:
            return False
    return True


__all__ = ["QUANTITY_RE", "SUFFIX", "parse_quantity", "same_requests"]
