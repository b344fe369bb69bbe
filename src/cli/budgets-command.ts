/**
 * `chatgate budgets list | set | reset`: the commander definitions (the actions load `./budgets.js`
 * when they run, so other commands never load the budget modules).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CliIo } from './context.js';
import type { BudgetsSetFlags } from './budgets.js';

type Runner = (action: () => Promise<number>) => Promise<void>;

const actions = () => import('./budgets.js');

/** Registers `chatgate budgets` on `program`. */
export function addBudgetsCommand(program: Command, io: CliIo, run: Runner): void {
  const budgets = program.command('budgets').description('spend limits: what is used and left, per user, chat and the deployment; set or reset a limit');
  budgets.command('list').description('every limit in force today and this month: used, limit, left, when it resets')
    .option('--json', 'print JSON')
    .action((flags: { json?: boolean }) => run(async () => (await actions()).listCommand(io, flags)));
  const limit = (flag: string, what: string, parse: (value: string) => number | null) => new Option(flag, `${what} (\`none\` removes it)`).argParser(parse);
  budgets.command('set').description('store limits for one user, chat or the deployment (wins over the budgets file and the environment)')
    .argument('<level>', 'user, chat or deployment').argument('[id]', 'the user (<channel>:<userId>) or chat (session id); none for the deployment')
    .addOption(limit('--daily-usd <usd>', 'spend per day, USD', amount(false)))
    .addOption(limit('--monthly-usd <usd>', 'spend per month, USD', amount(false)))
    .addOption(limit('--daily-tokens <n>', 'tokens per day', amount(true)))
    .addOption(limit('--monthly-tokens <n>', 'tokens per month', amount(true)))
    .option('--unlimited', 'no limit at all for this subject (operators)')
    .option('--json', 'print JSON')
    .action((level: string, id: string | undefined, flags: BudgetsSetFlags) => run(async () => (await actions()).setCommand(io, level, id, flags)));
  budgets.command('reset').description('remove the stored limits of one user, chat or the deployment (the budgets file and environment hold again)')
    .argument('<level>', 'user, chat or deployment').argument('[id]', 'the user or chat; none for the deployment')
    .option('--usage', 'also start today\'s and this month\'s counters again at 0')
    .option('--json', 'print JSON')
    .action((level: string, id: string | undefined, flags: { usage?: boolean; json?: boolean }) => run(async () => (await actions()).resetCommand(io, level, id, flags)));
}

/** commander parser of a limit: a number ≥ 0 (an integer for tokens) or `none`. */
function amount(integer: boolean): (value: string) => number | null {
  return (value) => {
    if (value.trim() === 'none') return null;
    const ok = integer ? /^\d+$/.test(value.trim()) : /^\d+(\.\d+)?$/.test(value.trim());
    if (!ok) throw new InvalidArgumentError(integer ? 'must be an integer ≥ 0 or `none`' : 'must be a number ≥ 0 (e.g. 2.50) or `none`');
    return Number(value);
  };
}
