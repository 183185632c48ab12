"""Dipole fields in planar multilayers: the Sommerfeld-integral dyadic Green's tensor.

``Stack`` describes the layers; ``green_tensor`` returns G (N, 3, 3) and ``dipole_fields``
(alias ``fields``) E and H of a dipole. See green.py for the conventions.
"""

from .green import DipoleFields, dipole_fields, fields, free_space, green_tensor
from .stack import Stack

__all__ = ["DipoleFields", "Stack", "dipole_fields", "fields", "free_space", "green_tensor"]
