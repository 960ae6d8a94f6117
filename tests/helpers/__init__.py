"""What the tests share: constructed sweeps, the figures' layout check, the browser."""
