"""The toolsets of dockyard-name-origin, every tool of which only reads: ``predict`` (batch_predict, on by
default), ``details`` (predict_origin, quota_status) and ``traits`` (predict_traits), off by default."""
