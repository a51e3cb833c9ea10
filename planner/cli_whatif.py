"""What-if commands (`planner compare`, `planner sweep`), registered on the main CLI group."""
