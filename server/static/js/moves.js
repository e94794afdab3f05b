// How a finished hand was played, read from its public record (docs/FAIRNESS.md 7): the
// record's `actions` are the players' inputs only, so what each one did at the table (a vote or
// the team's answer, the card a clock played, when a round ended) is worked out here by
// following the hand as the engine does (truco/match.py; docs/RULE_DECISIONS.md). The words are
// the table page's log's (table.js), past tense.

const RANKS = "4567QJKA23";
const SUITS = "CHSD";
// truco/variants.py: the stake ladder, its steps' names, and the special hands
// (the score making a mão de onze / dez, its name, its value and the points when its team runs)
export const RULES = {
  paulista: { ladder: [1, 3, 6, 9, 12], names: ["truco", "seis", "nove", "doze"],
    special: 11, specialName: "mão de onze", specialValue: 3, specialRun: 1 },
  mineiro: { ladder: [2, 4, 6, 10, 12], names: ["truco", "seis", "nove", "doze"],
    special: 10, specialName: "mão de dez", specialValue: 4, specialRun: 2 },
  argentino: { ladder: [1, 2, 3, 4], names: ["truco", "retruco", "vale cuatro"], special: null },
};
const MINEIRO_MANILHAS = ["4C", "7H", "AS", "7D"];
// Argentino, strongest first; cards on one line are equal
const ARGENTINO_ORDER = [["AS"], ["AC"], ["7S"], ["7D"], ["3C", "3H", "3S", "3D"], ["2C", "2H", "2S", "2D"],
  ["AH", "AD"], ["KC", "KH", "KS", "KD"], ["JC", "JH", "JS", "JD"], ["QC", "QH", "QS", "QD"], ["7H", "7C"],
  ["6C", "6H", "6S", "6D"], ["5C", "5H", "5S", "5D"], ["4C", "4H", "4S", "4D"]];
const ENVIDO_WORDS = { envido: "envido", real_envido: "real envido", falta_envido: "falta envido" };
const ENVIDO_CALLS = new Set(Object.keys(ENVIDO_WORDS));

/** A card's strength (higher wins, equal ties), as truco/variants.py ranks it. */
function strengthOf(variant, vira) {
  if (variant === "argentino") {
    const table = new Map(ARGENTINO_ORDER.flatMap((cards, step) => cards.map((c) => [c, ARGENTINO_ORDER.length - 1 - step])));
    return (card) => table.get(card);
  }
  // manilhas above every plain card (a plain card is its rank's place, 0..9)
  const manilha = variant === "mineiro" ? (card) => MINEIRO_MANILHAS.indexOf(card)
    : (card) => (RANKS.indexOf(card[0]) === (RANKS.indexOf(vira[0]) + 1) % RANKS.length ? SUITS.indexOf(card[1]) : -1);
  return (card) => (manilha(card) >= 0 ? 13 - manilha(card) : RANKS.indexOf(card[0]));
}

function pointsText(points) {
  return points === 1 ? "1 ponto" : `${points} pontos`;
}

/**
 * The hand's moves by round: [{round, moves: [{index, seat, do, automatic, card, parts}]}]:
 * `index` the record's action (none for a team's answer after its deciding vote, or a round's
 * result, whose `winner` is the seat that took it), `parts` strings and {card} for the caller
 * to draw. `names`:
 * {seat(s) -> "Lugar 1" / "Você", seatMid(s) -> "lugar 1" / "você", team(t), teamMid(t)}.
 * Throws on an action the hand cannot have had (a card the seat does not hold): the caller then
 * lists the actions as written (the `replay` check, on the command line, says why).
 */
/** The special hand a match score makes (RULES.md): `ferro` when both teams are at the special
 * score, else `team`, the one at onze / dez (null: a plain hand; Argentino has none). */
export function specialHandOf(variant, score) {
  const at = score.map((points) => points === RULES[variant].special);
  const ferro = at[0] && at[1];
  return { ferro, team: !ferro && (at[0] || at[1]) ? at.indexOf(true) : null };
}

export function handMoves(record, names) {
  const v = record.variant;
  const rules = RULES[v];
  const arg = v === "argentino";
  const seats = record.seats;
  const hands = record.deal.hands;
  const strength = strengthOf(v, record.deal.vira);
  const { ferro, team: specialTeam } = specialHandOf(v, record.score_before);
  // one voter per team (1x1), or the first answer is the team's: no vote, the answer itself
  const voting = seats === 4 && record.mode === "vote";
  const hand = {
    used: hands.map(() => new Set()), folded: new Set(), table: [], rounds: [],
    level: 0, stake: rules.ladder[0], truco: null, special: specialTeam !== null, envido: null,
    votes: Array(seats).fill(null), over: false,
  };
  const rounds = [{ round: 1, moves: [] }];
  const say = (move) => rounds[rounds.length - 1].moves.push(move);
  const voters = (team) => Array.from({ length: seats }, (_, s) => s).filter((s) => s % 2 === team && !hand.folded.has(s));
  const answering = () => {
    if (hand.envido && !hand.envido.settled) return 1 - hand.envido.team;
    if (hand.truco) return 1 - hand.truco.team;
    return hand.special ? specialTeam : null;
  };
  const request = () => (hand.envido && !hand.envido.settled ? "envido" : hand.truco ? "truco" : hand.special ? "special" : null);
  const askRaise = (team) => {
    const level = (hand.truco ? hand.truco.level : hand.level) + 1;
    hand.truco = { team, level };
    return `pediu ${rules.names[level - 1]}! (vale ${rules.ladder[level]})`;
  };
  // a vote in words, for the request it answers (table.js voteName)
  const voteWords = (kind) => {
    const req = request();
    if (req === "special" && kind === "accept") return `jogar a ${rules.specialName}`;
    if (req === "special" && kind === "decline") return `correr da ${rules.specialName}`;
    if (kind === "raise") return arg ? rules.names[hand.truco.level] : `aumentar para ${rules.names[hand.truco.level]}`;
    if (kind === "accept") return arg ? "quiero" : "aceitar";
    if (kind === "decline") return arg ? "no quiero" : "correr";
    return ENVIDO_WORDS[kind] ?? kind;
  };

  /** The team's answer to the pending request: its words (after "Lugar 2 " or "Dupla B "). */
  function answer(team, kind) {
    hand.votes.fill(null);
    const req = request();
    if (req === "special") {
      hand.special = false;
      if (kind === "accept") {
        hand.stake = rules.specialValue;
        return `aceitou jogar a ${rules.specialName} (vale ${rules.specialValue})`;
      }
      hand.over = true;
      return `correu da ${rules.specialName}: ${names.teamMid(1 - team)} marca ${pointsText(rules.specialRun)}`;
    }
    if (req === "envido") {
      const chain = hand.envido.chain;
      if (ENVIDO_CALLS.has(kind)) {
        chain.push(kind);
        hand.envido.team = team;
        return `cantou ${ENVIDO_WORDS[kind]}! (${chain.map((c) => ENVIDO_WORDS[c]).join(", ")})`;
      }
      hand.envido.settled = true;
      return `disse ${kind === "accept" ? "quiero" : "no quiero"} ao envido (${chain.map((c) => ENVIDO_WORDS[c]).join(", ")})`;
    }
    if (kind === "decline") {
      hand.over = true;
      return `${arg ? "disse no quiero" : "correu"}: ${names.teamMid(hand.truco.team)} marca ${pointsText(hand.stake)}`;
    }
    if (ENVIDO_CALLS.has(kind)) {
      // el envido va primero: the truco waits, and is answered after the envido
      hand.envido = { team, chain: [kind], settled: false };
      return `cantou ${ENVIDO_WORDS[kind]}! (o envido vai primeiro: o truco espera)`;
    }
    hand.level = hand.truco.level;
    hand.stake = rules.ladder[hand.level];
    const accepted = `${arg ? "disse quiero" : "aceitou"}: a mão vale ${hand.stake}`;
    if (kind === "raise") return `${accepted}; e ${askRaise(team)}`;
    hand.truco = null;
    return accepted;
  }

  /** A seat's answer: the team's at once (1x1, `first`, a partner gone al mazo), else a vote. */
  function respond(index, seat, kind, automatic) {
    const team = seat % 2;
    const auto = automatic ? " (automático)" : "";
    if (!voting || voters(team).length < 2) {
      say({ index, seat, do: kind, automatic, parts: [names.seat(seat), " ", answer(team, kind), auto] });
      return;
    }
    hand.votes[seat] = kind;
    say({ index, seat, do: kind, automatic, vote: true, parts: [names.seat(seat), ` votou: ${voteWords(kind)}${auto}`] });
    // the partners' latest votes agree: that is the team's answer
    if (voters(team).every((s) => hand.votes[s] === kind)) {
      say({ seat: null, do: "answer", automatic: false, parts: [names.team(team), " ", answer(team, kind)] });
    }
  }

  function endRound() {
    let best = -2;
    let first = null;
    let teams = new Set();
    for (const play of hand.table) {
      const s = play.covered ? -1 : strength(play.card);
      if (s > best) [best, first, teams] = [s, play, new Set([play.seat % 2])];
      else if (s === best) teams.add(play.seat % 2);
    }
    const winner = best === -1 || teams.size === 2 ? null : first;
    hand.rounds.push(winner === null ? null : winner.seat % 2);
    const number = hand.rounds.length;
    say({ seat: null, do: "round", winner: winner?.seat ?? null, automatic: false, parts: winner === null
      ? [`Rodada ${number}: empatou (cangou)`] : [`Rodada ${number}: `, names.seat(winner.seat), " ganhou"] });
    hand.table = [];
    const [a, b, c] = hand.rounds;
    hand.over = number === 3 || (number === 2 && (a === null || b === null ? a !== null || b !== null : a === b));
    if (!hand.over) rounds.push({ round: number + 1, moves: [] });
  }

  function play(index, seat, position, covered, automatic, blind) {
    const card = hands[seat][position];
    if (card === undefined) throw new Error(`o lugar ${seat + 1} não tem essa carta`);
    hand.used[seat].add(position);
    hand.table.push({ seat, card, covered });
    let words;
    if (covered) words = " cobriu uma carta: ";
    else if (blind) words = ` jogou às cegas a ${position + 1}ª carta da mão: `;
    else words = " jogou ";
    say({ index, seat, do: "play", automatic, card, covered, parts: [names.seat(seat), words, { card }, automatic ? " (automático)" : ""] });
    if (hand.table.length === seats - hand.folded.size) endRound();
  }

  function fold(index, seat) {
    hand.folded.add(seat);
    say({ index, seat, do: "fold", automatic: false, parts: [names.seat(seat), " foi al mazo"] });
    const team = seat % 2;
    if (voters(team).length === 0) hand.over = true;
    else if (hand.table.length && hand.table.length === seats - hand.folded.size) endRound();
  }

  record.actions.forEach((action, index) => {
    const { seat } = action;
    if (hand.over) {
      say({ index, seat, do: action.do, automatic: false, parts: [names.seat(seat), `: ${action.do} (depois do fim da mão)`] });
      return;
    }
    const team = answering();
    if (action.do === "timeout") {
      if (team !== null && hand.votes[seat] !== null) {
        // the partners voted apart until their 10 s ran out: the team declines
        say({ index, seat, do: "timeout", automatic: true,
          parts: [names.team(team), ` não combinou a tempo e ${answer(team, "decline")} (automático)`] });
      } else if (team !== null) {
        respond(index, seat, "decline", true);
      } else {
        const left = [0, 1, 2].filter((p) => !hand.used[seat].has(p));
        if (!left.length) throw new Error(`o lugar ${seat + 1} não tem carta para jogar`);
        // the weakest card, between equals the one dealt first; in mão de ferro the first left
        const position = ferro ? left[0]
          : left.reduce((low, p) => (strength(hands[seat][p]) < strength(hands[seat][low]) ? p : low));
        play(index, seat, position, false, true, ferro);
      }
    } else if (team !== null) {
      respond(index, seat, action.do, false);
    } else if (action.do === "play") {
      const position = action.position ?? hands[seat].indexOf(action.card);
      play(index, seat, position, Boolean(action.covered), false, action.position !== undefined);
    } else if (action.do === "raise") {
      say({ index, seat, do: "raise", automatic: false, parts: [names.seat(seat), " ", askRaise(seat % 2)] });
    } else if (ENVIDO_CALLS.has(action.do)) {
      hand.envido = { team: seat % 2, chain: [action.do], settled: false };
      say({ index, seat, do: action.do, automatic: false, parts: [names.seat(seat), ` cantou ${ENVIDO_WORDS[action.do]}!`] });
    } else if (action.do === "fold") {
      fold(index, seat);
    }
  });
  return rounds.filter((r) => r.moves.length);
}
