"""emjax: computational electromagnetics on CPU and GPU with JAX.

Conventions (used everywhere in emjax):

* time dependence ``exp(-i omega t)``; complex refractive index ``m = n + i kappa`` with
  ``kappa >= 0`` absorbing; relative permittivity ``eps = m**2``;
* lengths in any unit shared by wavelength and geometry (say micrometres);
* incident plane waves of unit amplitude; cross sections in length**2, efficiencies
  ``Q = C / (pi a_eq**2)`` with ``a_eq`` the volume-equivalent radius;
* orientations as ZYZ Euler angles (alpha, beta, gamma) in degrees, as in ADDA;
* amplitude and Mueller matrices as in Bohren & Huffman; DDA's default scattering plane is
  the yz plane (phi = 90 deg) with incidence along +z, as in ADDA.

emjax never changes JAX's global configuration: solvers enable 64-bit types locally.
"""

__version__ = "0.1.0"

from .errors import ConfigError, ConvergenceError, EmjaxError, ResourceError  # noqa: E402

__all__ = ["ConfigError", "ConvergenceError", "EmjaxError", "ResourceError", "__version__"]
