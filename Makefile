# Thin wrapper over CMake: `make demo` and `make test` are the README's two quick-start commands.
# Both install any missing Debian packages first (apt-get; through sudo when not root).

PACKAGES := cmake g++ make libeigen3-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev libtinyxml2-dev chromium
JOBS     := $(shell nproc 2>/dev/null || echo 2)
BUILD    := build
SANITIZE := build-sanitize
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-sanitize build deps bench clean

# Trains `reverse`, draws the attention it learned in the terminal, and writes the HTML report.
demo: build
	./$(BUILD)/examples/attograd/attograd train --task reverse --out runs/reverse
	./$(BUILD)/examples/attograd/attograd inspect --run runs/reverse --input "a b c d e f g"
	./$(BUILD)/examples/attograd/attograd inspect --run runs/reverse --samples 3 --format html

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

bench: build
	@for b in $(BUILD)/bench/bench_*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done

# Installs only what is missing, so a machine that has everything never calls apt-get.
deps:
	@missing=$$(for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

clean:
	rm -rf $(BUILD) $(SANITIZE) runs
