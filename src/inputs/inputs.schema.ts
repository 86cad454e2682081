import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { GIVEN_ID_PATTERN, StringEnum } from '../platform/schema.ts';

/**
 * InputProperty: fourteen variants, discriminated by `type`, in one style (snake_case fields, the same
 * common fields). docs/inputs.md shows each with an example. Nested variants (`object`, `array`, ...) hold InputProperty again, so the
 * union is one recursive schema with `$id` InputProperty.
 */
export const INPUT_TYPES = [
  'string',
  'text',
  'number',
  'boolean',
  'array',
  'string_array',
  'object',
  'object_map',
  'object_array',
  'section',
  'compound',
  'reference',
  'git_repository',
  'key_value',
] as const;
export type InputType = (typeof INPUT_TYPES)[number];

/** A `default` that is not a literal: the effective default value of a definition, by its givenId. */
export const DEFAULT_VALUE_REF_KEY = '$defaultValue';
export const DefaultValueRef = Type.Object(
  { [DEFAULT_VALUE_REF_KEY]: Type.String({ minLength: 1, maxLength: 60, pattern: GIVEN_ID_PATTERN, description: 'givenId of a default-value definition' }) },
  {
    additionalProperties: false,
    title: 'DefaultValueRef',
    description: 'Resolved to the effective default value of that definition for the target environment',
  },
);
export type DefaultValueRef = Static<typeof DefaultValueRef>;

const ShortText = Type.String({ maxLength: 1024 });
const Count = Type.Integer({ minimum: 0, maximum: 10000 });

/** show_when: `{ <sibling input id>: value | [values] }`; the input is shown (and required) only when every entry matches. */
const ShowWhen = Type.Object({}, { additionalProperties: true, description: 'Sibling input id → the value (or list of values) that shows this input' });

export const Option = Type.Object(
  {
    value: Type.String({ maxLength: 1024 }),
    label: Type.Optional(ShortText),
    description: Type.Optional(ShortText),
    group_label: Type.Optional(ShortText),
    show_when: Type.Optional(ShowWhen),
  },
  { additionalProperties: false },
);

export const Pattern = Type.Object(
  {
    pattern: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'RE2 regular expression, matched in linear time (no backreferences, no lookaround); see docs/inputs.md',
    }),
    message: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

function discriminator<T extends InputType>(type: T) {
  return StringEnum([type] as const, { description: 'discriminator' });
}

/** Fields every variant has. */
function common<T extends InputType>(type: T) {
  return {
    id: Type.String({ minLength: 1, maxLength: 128, description: 'unique identifier of the input among its siblings' }),
    label: Type.String({ minLength: 1, maxLength: 255, description: 'text above the form field' }),
    type: discriminator(type),
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    required: Type.Optional(Type.Boolean()),
    show_when: Type.Optional(ShowWhen),
    collapsible: Type.Optional(Type.Boolean({ description: 'default false' })),
    immutable: Type.Optional(Type.Boolean({ description: 'default false' })),
    moved_from: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 50 })),
  };
}

/** A literal of the variant's value type, or a default-value reference. */
function withDefault<T extends TSchema>(literal: T) {
  return Type.Optional(Type.Union([literal, DefaultValueRef]));
}

const Patterns = Type.Optional(Type.Array(Pattern, { maxItems: 20 }));
const Options = Type.Optional(Type.Array(Option, { maxItems: 1000 }));
const AnyObject = Type.Object({}, { additionalProperties: true });
const Strict = { additionalProperties: false } as const;

/**
 * The union is validated as a `oneOf` with a `discriminator` on `type` (Ajv's `discriminator` option, and
 * OpenAPI 3.0's keyword): the validator checks a node against its one variant only. As a plain `anyOf`
 * with `allErrors`, every node was checked against all fourteen, and the five that nest recursed into
 * the children: about ×5 work per level, so a 655-byte schema ten levels deep blocked the server for
 * seconds. The TypeScript type is still the union's.
 */
function discriminateByType(schema: object) {
  const node = schema as { anyOf?: unknown[]; oneOf?: unknown[] } & Record<string, unknown>;
  if (!node.anyOf) throw new Error('InputProperty must be a union');
  Object.assign(node, { type: 'object', required: ['type'], discriminator: { propertyName: 'type' }, oneOf: node.anyOf });
  delete node.anyOf;
}

export const InputProperty = Type.Recursive(
  (This) =>
    Type.Union([
      Type.Object(
        {
          ...common('string'),
          default: withDefault(Type.String()),
          placeholder: Type.Optional(ShortText),
          prefix: Type.Optional(ShortText),
          suffix: Type.Optional(ShortText),
          min_current_value: Type.Optional(Type.Boolean({ description: 'default false' })),
          no_options_message: Type.Optional(ShortText),
          patterns: Patterns,
          values: Options,
        },
        { ...Strict, title: 'StringInput' },
      ),
      Type.Object(
        {
          ...common('text'),
          default: withDefault(Type.String()),
          placeholder: Type.Optional(ShortText),
          min_length: Type.Optional(Count),
          max_length: Type.Optional(Type.Integer({ minimum: 0, maximum: 1048576 })),
          rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
          patterns: Patterns,
        },
        { ...Strict, title: 'TextInput' },
      ),
      Type.Object(
        {
          ...common('number'),
          default: withDefault(Type.Number()),
          min: Type.Optional(Type.Number()),
          max: Type.Optional(Type.Number()),
          step: Type.Optional(Type.Number({ minimum: 0, description: 'greater than 0; the value must be min (or 0) plus a multiple of it' })),
          integer: Type.Optional(Type.Boolean({ description: 'default false' })),
          placeholder: Type.Optional(ShortText),
          prefix: Type.Optional(ShortText),
          suffix: Type.Optional(ShortText),
          min_current_value: Type.Optional(Type.Boolean({ description: 'default false' })),
        },
        { ...Strict, title: 'NumberInput' },
      ),
      Type.Object({ ...common('boolean'), default: withDefault(Type.Boolean()) }, { ...Strict, title: 'BooleanInput' }),
      Type.Object(
        {
          ...common('array'),
          default: withDefault(Type.Array(Type.Unknown())),
          items: This,
          min_items: Type.Optional(Count),
          max_items: Type.Optional(Count),
        },
        { ...Strict, title: 'ArrayInput' },
      ),
      Type.Object(
        {
          ...common('string_array'),
          default: withDefault(Type.Array(Type.String())),
          placeholder: Type.Optional(ShortText),
          min_items: Type.Optional(Count),
          max_items: Type.Optional(Count),
          unique: Type.Optional(Type.Boolean({ description: 'default false' })),
          patterns: Patterns,
          values: Options,
        },
        { ...Strict, title: 'StringArrayInput' },
      ),
      Type.Object(
        { ...common('object'), default: withDefault(AnyObject), properties: Type.Array(This, { maxItems: 200 }) },
        { ...Strict, title: 'ObjectInput' },
      ),
      Type.Object(
        {
          ...common('object_map'),
          default: withDefault(AnyObject),
          key_label: Type.Optional(ShortText),
          key_patterns: Patterns,
          properties: Type.Array(This, { maxItems: 200, description: 'the fields of each value of the map' }),
          min_items: Type.Optional(Count),
          max_items: Type.Optional(Count),
        },
        { ...Strict, title: 'ObjectMapInput' },
      ),
      Type.Object(
        {
          ...common('object_array'),
          default: withDefault(Type.Array(AnyObject)),
          properties: Type.Array(This, { maxItems: 200, description: 'the fields of each item' }),
          min_items: Type.Optional(Count),
          max_items: Type.Optional(Count),
        },
        { ...Strict, title: 'ObjectArrayInput' },
      ),
      Type.Object(
        { ...common('section'), default: withDefault(AnyObject), properties: Type.Array(This, { maxItems: 200 }) },
        { ...Strict, title: 'SectionInput' },
      ),
      Type.Object(
        {
          ...common('compound'),
          default: withDefault(AnyObject),
          options: Type.Array(
            Type.Object(
              {
                value: Type.String({ minLength: 1, maxLength: 128 }),
                label: Type.Optional(ShortText),
                description: Type.Optional(ShortText),
                properties: Type.Array(This, { maxItems: 200 }),
              },
              Strict,
            ),
            { minItems: 1, maxItems: 50, description: 'the alternatives; the value names its choice in `kind`' },
          ),
        },
        { ...Strict, title: 'CompoundInput' },
      ),
      Type.Object(
        {
          ...common('reference'),
          default: withDefault(AnyObject),
          module: Type.String({ minLength: 1, maxLength: 255, description: 'module definition type the referenced instance must have' }),
          output: Type.String({ minLength: 1, maxLength: 255, description: 'output of the referenced instance this input consumes' }),
          allow_cross_environment: Type.Optional(Type.Boolean({ description: 'default false' })),
        },
        { ...Strict, title: 'ReferenceInput' },
      ),
      Type.Object(
        {
          ...common('git_repository'),
          default: withDefault(AnyObject),
          require_ref: Type.Optional(Type.Boolean({ description: 'default false' })),
        },
        { ...Strict, title: 'GitRepositoryInput' },
      ),
      Type.Object(
        {
          ...common('key_value'),
          default: withDefault(Type.Object({}, { additionalProperties: Type.String() })),
          key_patterns: Patterns,
          value_patterns: Patterns,
          min_items: Type.Optional(Count),
          max_items: Type.Optional(Count),
          sensitive: Type.Optional(Type.Boolean({ description: 'default false' })),
        },
        { ...Strict, title: 'KeyValueInput' },
      ),
    ]),
  { $id: 'InputProperty', title: 'InputProperty' },
);
discriminateByType(InputProperty);
export type InputProperty = Static<typeof InputProperty>;
export type InputPropertyOf<T extends InputType> = Extract<InputProperty, { type: T }>;

/**
 * InputProperty in responses: written as it was stored (it was validated on the way in). Given the
 * union itself, the response serializer (fast-json-stringify) compiled the fourteen recursive variants
 * with Ajv on a route's first response, blocking the event loop for about a second.
 */
export const StoredInputProperty = Type.Unsafe<InputProperty>({
  type: 'object',
  additionalProperties: true,
  description: 'An InputProperty (components/schemas/InputProperty), exactly as it was stored',
});
