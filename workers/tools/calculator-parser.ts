/**
 * A safe arithmetic evaluator (recursive descent; no eval, no Function): numbers, + − × ÷ % ^,
 * parentheses, unary minus, constants pi/e and a few functions.
 */

const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  sqrt: Math.sqrt, abs: Math.abs, round: Math.round, floor: Math.floor, ceil: Math.ceil,
  sin: Math.sin, cos: Math.cos, tan: Math.tan, ln: Math.log, log: Math.log10, exp: Math.exp,
  min: Math.min, max: Math.max, pow: Math.pow,
};
const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E };
const MAX_LENGTH = 500;

type Token = { kind: 'num'; value: number } | { kind: 'id'; value: string } | { kind: 'op'; value: string };

/** Evaluates an arithmetic expression. @throws Error saying what is wrong and where. */
export function evaluateExpression(expression: string): number {
  if (expression.length > MAX_LENGTH) throw new Error(`expression longer than ${MAX_LENGTH} characters`);
  const parser = new Parser(tokenize(expression));
  const value = parser.expression();
  parser.expectEnd();
  if (!Number.isFinite(value)) throw new Error('result is not a finite number');
  return value;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re = /\s*(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)|([a-zA-Z_]\w*)|(\*\*|[-+*/%^(),×÷]))/y;
  let index = 0;
  while (index < text.length) {
    if (/^\s*$/.test(text.slice(index))) break;
    re.lastIndex = index;
    const match = re.exec(text);
    if (!match) throw new Error(`unexpected character "${text.slice(index).trim()[0]}" at ${index}`);
    if (match[1] !== undefined) tokens.push({ kind: 'num', value: Number(match[1]) });
    else if (match[2] !== undefined) tokens.push({ kind: 'id', value: match[2].toLowerCase() });
    else tokens.push({ kind: 'op', value: ({ '**': '^', '×': '*', '÷': '/' } as Record<string, string>)[match[3]!] ?? match[3]! });
    index = re.lastIndex;
  }
  return tokens;
}

class Parser {
  private position = 0;
  constructor(private readonly tokens: Token[]) {}

  expression(): number {
    let value = this.term();
    while (this.isOp('+') || this.isOp('-')) value = this.next().value === '+' ? value + this.term() : value - this.term();
    return value;
  }

  expectEnd(): void {
    if (this.position < this.tokens.length) throw new Error(`unexpected "${this.tokens[this.position]!.value}"`);
  }

  private term(): number {
    let value = this.unary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const op = this.next().value;
      const right = this.unary();
      if ((op === '/' || op === '%') && right === 0) throw new Error('division by zero');
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  }

  private unary(): number {
    if (this.isOp('-')) { this.next(); return -this.unary(); }
    if (this.isOp('+')) { this.next(); return this.unary(); }
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    if (this.isOp('^')) { this.next(); return base ** this.unary(); }
    return base;
  }

  private primary(): number {
    const token = this.next();
    if (!token) throw new Error('unexpected end of expression');
    if (token.kind === 'num') return token.value;
    if (token.kind === 'op' && token.value === '(') {
      const value = this.expression();
      this.expect(')');
      return value;
    }
    if (token.kind === 'id') return this.identifier(token.value);
    throw new Error(`unexpected "${token.value}"`);
  }

  private identifier(name: string): number {
    if (!this.isOp('(')) {
      if (Object.hasOwn(CONSTANTS, name)) return CONSTANTS[name]!;
      throw new Error(`unknown name "${name}"`);
    }
    const fn = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (!fn) throw new Error(`unknown function "${name}"`);
    this.next();
    const args = [this.expression()];
    while (this.isOp(',')) { this.next(); args.push(this.expression()); }
    this.expect(')');
    return fn(...args);
  }

  private isOp(value: string): boolean {
    const token = this.tokens[this.position];
    return token !== undefined && token.kind === 'op' && token.value === value;
  }

  private next(): Token {
    return this.tokens[this.position++]!;
  }

  private expect(value: string): void {
    if (!this.isOp(value)) throw new Error(`expected "${value}"`);
    this.next();
  }
}
