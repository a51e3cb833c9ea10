"""A quota policy in other systems' formats: Kueue and Volcano manifests, Slurm accounting commands."""
