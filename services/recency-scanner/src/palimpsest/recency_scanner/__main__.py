"""`python -m palimpsest.recency_scanner`: run the recency-scanner service (one pod in a cluster)."""

from palimpsest.core.service import main_for
from palimpsest.recency_scanner.service import Settings, bootstrap

if __name__ == "__main__":
    main_for(bootstrap, Settings)
