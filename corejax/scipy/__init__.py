"""corejax.scipy: special functions."""
from corejax.scipy import special
