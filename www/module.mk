# www/: the browser dashboard (static files served by ringmasterd; no build step) and
# its real-browser suite in tests/browser/ (playwright-core driving Debian's chromium
# against a real ringmasterd with its embedded PostgreSQL).
#
#   make test-browser    runs the suite alone; screenshots and the server log go to
#                        $(BROWSER_ARTIFACTS)

BROWSER_DIR       := tests/browser
BROWSER_DEPS      := $(BROWSER_DIR)/node_modules/playwright-core/package.json
BROWSER_ARTIFACTS ?= $(BUILD)/browser-artifacts

# playwright-core as pinned by package-lock.json; no browser download (chromium is Debian's).
$(BROWSER_DEPS): $(BROWSER_DIR)/package.json $(BROWSER_DIR)/package-lock.json
	cd $(BROWSER_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test-browser: $(BUILD)/ringmasterd $(BROWSER_DEPS)
	@command -v /usr/bin/chromium >/dev/null || packaging/install-deps.sh
	@mkdir -p $(BROWSER_ARTIFACTS)
	cd $(BROWSER_DIR) && RINGMASTERD=$(abspath $(BUILD)/ringmasterd) \
	    BROWSER_ARTIFACTS=$(abspath $(BROWSER_ARTIFACTS)) \
	    timeout 600 node --test --test-concurrency=1 --test-timeout=300000 \
	    --test-reporter=tap *.test.mjs

.PHONY: test-browser
