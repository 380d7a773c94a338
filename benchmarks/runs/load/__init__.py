"""The load run (``python -m benchmarks load``): closed loop to saturation, then open loop
(Poisson arrivals) up to and past the knee, over the raw keep-alive client."""
