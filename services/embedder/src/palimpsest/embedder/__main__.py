"""`python -m palimpsest.embedder`: run the embedder service (one pod in a cluster)."""

from palimpsest.embedder.service import Settings, bootstrap
from palimpsest.core.service import main_for

if __name__ == "__main__":
    main_for(bootstrap, Settings)
