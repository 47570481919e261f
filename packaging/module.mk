# packaging/: Debian packages.
#   make deb    ringmaster, ringmaster-worker and libringjob-dev into build/deb/ (lintian-clean)
deb: deps
	@RINGMASTER_EXTRA_PKGS="debhelper lintian dpkg-dev fakeroot" packaging/install-deps.sh
	@packaging/build-deb.sh

.PHONY: deb
