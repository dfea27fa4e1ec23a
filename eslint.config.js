// ESLint with typescript-eslint's recommended rules over the server, the CLI, the console, the benches and the tests.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '**/dist/', 'node_modules/', 'coverage/', '.drivewire/', 'scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node }, ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      // `_`-prefixed parameters and destructured leftovers are deliberate
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  { files: ['console/**'], languageOptions: { globals: { ...globals.browser } } },
  {
    // Tests read JSON response bodies whose shape each assertion states.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
