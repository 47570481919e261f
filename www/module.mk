# www/: the browser dashboard (static files served by ringmasterd; no build step; its charts
# are Debian's libjs-dygraphs, which ringmasterd serves from /usr/share/javascript) and
# its real-browser suite in tests/browser/ (playwright-core driving Debian's chromium
# against a real ringmasterd with its embedded PostgreSQL, a real ringmaster-worker with
# simulated GPUs and real mpirun train-mlp jobs; the what-if page runs ringmaster-sim).
#
#   make test-browser    runs the suite alone; screenshots and the server log go to
#                        $(BROWSER_ARTIFACTS)

BROWSER_DIR       := tests/browser
BROWSER_DEPS      := $(BROWSER_DIR)/node_modules/playwright-core/package.json
BROWSER_ARTIFACTS ?= $(BUILD)/browser-artifacts
BROWSER_PROGRAMS  := $(BUILD)/ringmasterd $(BUILD)/ringmaster-worker $(BUILD)/examples/train-mlp \
                     $(BUILD)/ringmaster-sim

# playwright-core as pinned by package-lock.json; no browser download (chromium is Debian's).
$(BROWSER_DEPS): $(BROWSER_DIR)/package.json $(BROWSER_DIR)/package-lock.json
	cd $(BROWSER_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The suite is one of the programs `make check` runs (see tests/run-tests.sh).
TEST_SCRIPTS     += $(BROWSER_DIR)/run.sh
TEST_SCRIPT_DEPS += $(BROWSER_PROGRAMS) $(BROWSER_DEPS)

test-browser: $(BROWSER_PROGRAMS) $(BROWSER_DEPS)
	@{ command -v /usr/bin/chromium && [ -e /usr/share/javascript/dygraphs/dygraph.min.js ]; } >/dev/null \
		|| packaging/install-deps.sh
	@BUILD=$(BUILD) tests/run-tests.sh $(BROWSER_DIR)/run.sh

.PHONY: test-browser
