import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'cdk.out/**',
      '.pipegate/**',
      '.pipegate-synth/**',
      '.tmp/**',
      'coverage/**',
      'dist/**',
      'functions/browser/scripts.generated.ts',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      eqeqeq: ['error', 'always'],
    },
  },
  // Formatting is prettier's (npm run format:check); eslint keeps to correctness.
  prettier,
);
