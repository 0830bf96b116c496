"""What one host offers, as plain frozen views, and whether each
device and region may be offered or bound (views.py: pure; db/
builds the views, the sinks and the bind read them), and the
interface of the sinks that publish it (sink.py)."""
