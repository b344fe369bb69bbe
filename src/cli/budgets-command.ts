/**
 * `chatgate budgets [list] | set | reset`: the commander definitions (the actions load `./budgets.js`
 * when they run, so other commands never load the budget modules).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseRuled, ruleText, TOKEN_LIMIT, USD_LIMIT, type NumberRule } from '../core/option-checks.js';
import type { CliIo } from './io.js';
import type { BudgetsSetFlags, LimitFlag } from './budgets.js';

type Runner = (action: () => Promise<number>) => Promise<void>;

const actions = () => import('./budgets.js');

/** Registers `chatgate budgets` on `program`. */
export function addBudgetsCommand(program: Command, io: CliIo, run: Runner): void {
  const budgets = program.command('budgets').description('spend limits: what is used and left, per user, chat and the deployment; set or reset a limit');
  // `chatgate budgets` alone lists, what someone typing it wants to see first; another word stays an unknown command.
  budgets.allowExcessArguments().action((_flags: unknown, command: Command) => command.args.length > 0
    ? command.error(`error: unknown command '${command.args[0]}'`, { code: 'commander.unknownCommand' })
    : run(async () => (await actions()).listCommand(io, {})));
  budgets.command('list').description('every limit in force today and this month: used, limit, left, when it resets (also `chatgate budgets` alone)')
    .option('--json', 'print JSON')
    .action((flags: { json?: boolean }) => run(async () => (await actions()).listCommand(io, flags)));
  const limit = (flag: string, what: string, parse: (value: string) => LimitFlag) => new Option(flag, `${what} (\`none\` removes it)`).argParser(parse);
  budgets.command('set').description('store limits for one user, chat or the deployment (wins over the budgets file and the environment)')
    .argument('<level>', 'user, chat or deployment').argument('[id]', 'the user (<channel>:<userId>) or chat (session id); none for the deployment')
    .addOption(limit('--daily-usd <usd>', 'spend per day, USD', amount(USD_LIMIT)))
    .addOption(limit('--monthly-usd <usd>', 'spend per month, USD', amount(USD_LIMIT)))
    .addOption(limit('--daily-tokens <n>', 'tokens per day', amount(TOKEN_LIMIT)))
    .addOption(limit('--monthly-tokens <n>', 'tokens per month', amount(TOKEN_LIMIT)))
    .option('--unlimited', 'no limit at all for this subject (operators)')
    .option('--json', 'print JSON')
    .action((level: string, id: string | undefined, flags: BudgetsSetFlags) => run(async () => (await actions()).setCommand(io, level, id, flags)));
  budgets.command('reset').description('remove the stored limits of one user, chat or the deployment (the budgets file and environment hold again)')
    .argument('<level>', 'user, chat or deployment').argument('[id]', 'the user or chat; none for the deployment')
    .option('--usage', 'also start today\'s and this month\'s counters again at 0')
    .option('--json', 'print JSON')
    .action((level: string, id: string | undefined, flags: { usage?: boolean; json?: boolean }) => run(async () => (await actions()).resetCommand(io, level, id, flags)));
}

/**
 * commander parser of a limit: a number keeping `rule` (the environment's and the budgets file's) or
 * `none`, kept as the word: commander turns a parser's null into "".
 */
function amount(rule: NumberRule): (value: string) => LimitFlag {
  return (value) => {
    if (value.trim() === 'none') return 'none';
    const n = parseRuled(value, rule);
    if (n === undefined) throw new InvalidArgumentError(`must be ${ruleText(rule)}${rule.integer ? '' : ' (e.g. 2.50)'} or \`none\``);
    return n;
  };
}
