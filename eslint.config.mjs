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
  // The rooms (docs/architecture.md): core decides and imports no adapter, service or lib
  // module (nor any AWS SDK); adapters talk to the outside and never reach up into services;
  // nothing under functions/ loads the CDK. A rule that needs a value from lib is handed it.
  {
    files: ['functions/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)(adapters|services)/',
              message: 'core is pure: it never imports an adapter or a service (pass what it needs in).',
            },
            { regex: '^(\\.\\./)+lib/', message: 'core imports nothing from lib/: move the shared constant into core, or pass it in.' },
            { regex: '^(@aws-sdk/|aws-cdk-lib|constructs$)', message: 'core is pure: no AWS SDK, no CDK.' },
          ],
        },
      ],
    },
  },
  {
    files: ['functions/adapters/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)services/',
              message: 'adapters never import services: the rule belongs to the service, which hands the adapter what it needs.',
            },
            { regex: '^(aws-cdk-lib|constructs$)', message: 'functions never load the CDK.' },
          ],
        },
      ],
    },
  },
  {
    files: ['functions/**/*.ts'],
    ignores: ['functions/core/**', 'functions/adapters/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(aws-cdk-lib|constructs$)', message: 'functions never load the CDK.' }] }],
    },
  },
  // Formatting is prettier's (npm run format:check); eslint keeps to correctness.
  prettier,
);
