"""`python -m palimpsest.analyzer`: run the analyzer service (one pod in a cluster)."""

from palimpsest.analyzer.service import Settings, bootstrap
from palimpsest.core.service import main_for

if __name__ == "__main__":
    main_for(bootstrap, Settings)
