# The two commands: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STATE ?= $(CURDIR)/state

.PHONY: run test venv sample-config policy-sample protos clean

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/cyborg-lite-all-in-one --state-dir $(STATE) $(ARGS)

# Under CI (CI=true, as tests/servers.py reads it) the 25 slowest tests are
# listed at the end, so that a slow one stays visible.
ifneq ($(filter 1 true yes,$(shell echo '$(CI)' | tr A-Z a-z)),)
CI_PYTEST_ARGS := --durations=25
endif

# A third worker on two cores: the tests wait on the servers and services
# they start for some 30% of the time (the CPUs were 70% busy with two).
TEST_WORKERS ?= 3

# The suite starts some 300 Python processes of ours (services, CLIs,
# Placement): byte-compiled once here, none of them compiles our modules
# again, even where PYTHONDONTWRITEBYTECODE keeps Python from caching them.
test: $(STAMP)
	$(BIN)/python -m compileall -q cyborg_lite bench tests > /dev/null
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(CI_PYTEST_ARGS) $(PYTEST_ARGS)

sample-config: $(STAMP)
	$(BIN)/oslo-config-generator --config-file etc/cyborg-lite-config-generator.conf

# etc/policy.yaml.sample from the rules in cyborg_lite/api/policies.
policy-sample: $(STAMP)
	$(BIN)/python -c 'from oslo_policy import generator; generator.generate_sample()' \
		--config-file etc/policy-generator.conf

# The kubelet's gRPC APIs (pluginregistration, DRA v1/v1beta1): Python
# stubs beside the .proto files, committed; a test checks they are current.
PROTOS := $(wildcard cyborg_lite/agent/dra/proto/*.proto)
protos: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. $(PROTOS)

clean:
	rm -rf $(VENV) $(STATE) .pytest_cache
