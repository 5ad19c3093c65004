"""vitest_config.settings over configurations written as projects write them: which quoted
entries are the test run's and coverage's include, exclude and dir, whatever else the file
holds (comments, regular expressions, template literals, ternaries, other blocks' keys)."""
from __future__ import annotations

import textwrap

from ralphpy.verify import vitest_config

CONFIG = textwrap.dedent("""\
    import { configDefaults, defineConfig } from 'vitest/config'
    // a brace in a comment { and a block: test: { exclude: ['no'] }
    const alias = { find: /^a{2}(.*)$/, replacement: `${dir}/{x}` } /* } */
    export default defineConfig(({ mode }) => ({
      resolve: { alias: [alias], extensions: ['.ts'] },
      optimizeDeps: { exclude: ['fsevents'] },
      test: {
        'include': process.env.CI ? ['src/**/*.test.ts'] : local,
        exclude: [
          ...configDefaults.exclude, // 'not/this/**'
          "e2e/**",
        ],
        testTimeout: 10 / 2,
        typecheck: { enabled: mode === "ci", include: ['**/*.test-d.ts'] },
        benchmark: { include: ['bench/**'] },
        coverage: {
          exclude: [`src/gen/**`],
          thresholds: { lines: 80 },
        },
        dir: path.join(__dirname, '..', 'test'),
        projects: [{ extends: true, test: { name: 'unit', include: ['unit/**'] } }],
      },
    }))
""")


def test_the_settings_are_read_by_the_block_they_are_in():
    found = {name: (s.line, s.entries) for name, s in vitest_config.settings(CONFIG).items()}
    assert found == {
        "test.include": (8, [(8, "src/**/*.test.ts"), (21, "unit/**")]),
        "test.exclude": (9, [(11, "e2e/**")]),
        "test.typecheck.include": (14, [(14, "**/*.test-d.ts")]),
        "coverage.exclude": (17, [(17, "src/gen/**")]),
        "test.dir": (20, [(20, ".."), (20, "test")]),
        "test.projects": (21, []),
    }


def test_a_setting_code_gives_is_there_without_entries():
    found = vitest_config.settings("export default {\n  test: {\n    exclude: shared.exclude,\n"
                                   "    include: cond ? mine : theirs,\n  },\n}\n")
    assert {name: s.entries for name, s in found.items()} == {"test.exclude": [],
                                                             "test.include": []}


def test_a_file_without_a_test_block_has_none_of_these_settings():
    assert vitest_config.settings("export default defineConfig({\n  build: { include: "
                                  "['src'] },\n  server: { watch: { exclude: ['x'] } },\n})\n"
                                  ) == {}


def test_comparisons_optional_chains_and_ternaries_keep_the_setting_they_are_in():
    found = vitest_config.settings("export default {\n  test: {\n    include: a?.b ?? ['x'],\n"
                                   "    exclude: c === d ? e : ['y'],\n  },\n}\n")
    assert {name: s.entries for name, s in found.items()} == {"test.include": [(3, "x")],
                                                             "test.exclude": [(4, "y")]}
