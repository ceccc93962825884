"""`python -m palimpsest.ingest`: run the ingest service (one pod in a cluster)."""

from palimpsest.core.service import main_for
from palimpsest.ingest.service import Settings, bootstrap

if __name__ == "__main__":
    main_for(bootstrap, Settings)
