"""``make cost``: the monthly idle cost and the cost of 1,000 turns, priced from the synthesized templates."""
