"""``assert_units(folder)``: every data variable and coordinate of every NetCDF file in a
command's output folder has a non-empty ``units`` attribute ("1" for dimensionless ones),
and no floating-point variable is all NaN (a field that was not computed is left out).
The command tests call it on the folders they write (tests/test_result_units.py lists them)."""

from pathlib import Path

import numpy as np


def assert_units(folder) -> list[str]:
    """Check every ``*.nc`` in ``folder``; returns the names of the files checked (>= 1)."""
    import xarray as xr

    files = sorted(Path(folder).glob("*.nc"))
    assert files, f"no NetCDF file in {folder}: {sorted(p.name for p in Path(folder).iterdir())}"
    for path in files:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            for var in [*ds.data_vars, *ds.coords]:
                units = ds[var].attrs.get("units")
                assert isinstance(units, str) and units.strip(), f"{path.name}: {var} has no units"
                values = ds[var].values
                if values.dtype.kind == "f" and values.size:
                    assert not np.all(np.isnan(values)), f"{path.name}: {var} is all NaN"
    return [p.name for p in files]
