"""`python -m palimpsest.chunker`: run the chunker service (one pod in a cluster)."""

from palimpsest.chunker.service import Settings, bootstrap
from palimpsest.core.service import main_for

if __name__ == "__main__":
    main_for(bootstrap, Settings)
