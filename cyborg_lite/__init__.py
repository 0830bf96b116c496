"""cyborg_lite: accelerator management in the style of OpenStack Cyborg."""
