"""Results: the plan read from a solve (costs, purchases, allocation), the bill of owned commitments, the risk view."""
