"""Teams, quotas and fairness: quotas from demand (policy), an hour-by-hour replay, and gaming."""
