"""`python -m palimpsest.reviewer`: run the reviewer service (one pod in a cluster)."""

from palimpsest.core.service import main_for
from palimpsest.reviewer.service import Settings, bootstrap

if __name__ == "__main__":
    main_for(bootstrap, Settings)
