"""HTTP routes, one module per area of the contract."""
