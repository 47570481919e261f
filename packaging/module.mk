# packaging/: Debian packages.
#   make deb    ringmaster, ringmaster-worker and libringjob-dev into build/deb/ (lintian-clean)
deb: deps
	@RINGMASTER_EXTRA_PKGS="debhelper lintian dpkg-dev fakeroot" packaging/install-deps.sh
	@packaging/build-deb.sh

.PHONY: deb

# The package test (tests/package/run.sh) is one of the programs `make check` runs: it builds,
# installs, runs, removes and purges the packages (as root; it skips itself otherwise).
TEST_SCRIPTS += tests/package/run.sh
