"""`python -m palimpsest.embedder`: run the embedder service (one pod in a cluster)."""

from palimpsest.core.service import main_for
from palimpsest.embedder.service import Settings, bootstrap

if __name__ == "__main__":
    main_for(bootstrap, Settings)
