"""corejax.scipy: special functions."""
from corejax.scipy import special
from corejax.scipy import linalg
from corejax.scipy import stats
from corejax.scipy import signal
