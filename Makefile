# Thin wrapper over CMake: `make demo` and `make test` are the README's two quick-start commands.
# Both install any missing Debian packages first (apt-get; through sudo when not root).

PACKAGES := cmake g++ make ccache libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev libtinyxml2-dev chromium libxsmm-dev libopenmpi-dev openmpi-bin help2man fortunes-min
DOCS_PACKAGES := mkdocs mkdocs-material doxygen linkchecker
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev
FUZZ      := build-fuzz
FUZZ_SECONDS ?= 60
JOBS     := $(shell nproc 2>/dev/null || echo 2)
BUILD    := build
SANITIZE := build-sanitize
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-sanitize build deps bench clean fuzz docs package

# Trains `reverse`, draws the attention it learned in the terminal, and writes the HTML report.
# Builds only the program (not the tests and benchmarks); --force: re-running replaces the run.
demo: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS) --target attograd_program
	./$(BUILD)/examples/attograd/attograd train --task reverse --out runs/reverse --force
	./$(BUILD)/examples/attograd/attograd inspect --run runs/reverse --input "a b c d e f g"
	./$(BUILD)/examples/attograd/attograd inspect --run runs/reverse --samples 3 --format html

# The documentation tools too, so that ctest runs the docs_site test.
test: PACKAGES += $(DOCS_PACKAGES)
test: build
	ctest --test-dir $(BUILD) -j$(JOBS) --output-on-failure

# allocator_may_return_null: a test asks for more memory than exists and expects a ResourceError.
test-sanitize: deps
	cmake -S . -B $(SANITIZE) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTOGRAD_SANITIZE=ON -DATTOGRAD_BUILD_BENCH=OFF
	cmake --build $(SANITIZE) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(SANITIZE) -j$(JOBS) --output-on-failure

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

# The documentation site, offline, in build/site: the guides (MkDocs), the command-line reference
# from --help, the gallery of reports (trains a few short runs) and the API reference (Doxygen).
docs: PACKAGES += $(DOCS_PACKAGES)
docs: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS) --target attograd_program
	/usr/bin/python3 tools/docs/build_site.py --program $(BUILD)/examples/attograd/attograd --out $(BUILD)/site

# The benchmark programs are outside the default build (`make build` / `make test` skip them).
bench: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS) --target attograd_benchmarks
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done

# Debian packages in $(BUILD)/packages: libattograd-dev, attograd, and attograd-doc when the
# documentation site ($(BUILD)/site) is built. Builds only the library, the program and its man
# page (cmake/package.cmake).
package: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS) --target attograd attograd_program attograd_man
	cd $(BUILD) && cpack

# libFuzzer targets (clang, ASan + UBSan) for the checkpoint reader, the TSV reader, the
# Trainer's resume of a run directory and the gettext .mo reader, each run for FUZZ_SECONDS from the committed seed corpus and dictionary
# (fuzz/corpus/NAME, fuzz/NAME.dict); new inputs go to $(FUZZ)/corpus/NAME, findings to $(FUZZ)/.
fuzz:
	@$(MAKE) --no-print-directory deps PACKAGES="$(FUZZ_PACKAGES)"
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTOGRAD_FUZZ=ON -DATTOGRAD_BUILD_TESTS=OFF -DATTOGRAD_BUILD_BENCH=OFF -DATTOGRAD_NATIVE=OFF
	cmake --build $(FUZZ) -j$(JOBS) --target fuzz_safetensors fuzz_tsv fuzz_run_dir fuzz_gettext
	@for f in safetensors tsv run_dir gettext; do \
	  mkdir -p $(FUZZ)/corpus/$$f; \
	  echo "== fuzz_$$f for $(FUZZ_SECONDS) s"; \
	  $(FUZZ)/fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -dict=fuzz/$$f.dict \
	    -artifact_prefix=$(FUZZ)/ $(FUZZ)/corpus/$$f fuzz/corpus/$$f || exit 1; \
	done

# Installs only what is missing, so a machine that has everything never calls apt-get.
deps:
	@missing=$$(for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

clean:
	rm -rf $(BUILD) $(SANITIZE) $(FUZZ) runs
