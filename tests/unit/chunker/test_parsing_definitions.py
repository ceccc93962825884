"""Definitions (name, kind, span) and chunks for every parsed language, from real-looking code.

Each sample is small enough to check by eye; the expected spans were read off the source.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from palimpsest.chunker.parsing import PARSED_LANGUAGES, analyze_file, detect_language
from palimpsest.chunker.parsing.lines import split_lines


@dataclass(frozen=True)
class Sample:
    path: str
    source: str
    chunks: list[tuple[str, str | None, int, int]]
    symbols: list[tuple[str, str, int, int, str | None]]


SAMPLES = [
    Sample(
        path="src/billing/invoice.py",
        source='''\
"""Billing: invoices and their totals."""

from decimal import Decimal

from .tax import TaxTable

# Rounding used everywhere.
ROUNDING = Decimal("0.01")


@dataclass(frozen=True)
class Invoice:
    """An issued invoice."""

    lines: list[Line]

    def total(self, table: TaxTable) -> Decimal:
        subtotal = sum_lines(self.lines)
        return table.apply(subtotal).quantize(ROUNDING)


def sum_lines(lines: list[Line]) -> Decimal:
    return sum((line.amount for line in lines), Decimal(0))
''',
        chunks=[
            ("window", None, 1, 10),
            ("class", "Invoice", 11, 19),
            ("function", "sum_lines", 22, 23),
        ],
        symbols=[
            ("Invoice", "class", 12, 19, None),
            ("total", "method", 17, 19, "Invoice"),
            ("sum_lines", "function", 22, 23, None),
        ],
    ),
    Sample(
        path="web/src/billing/invoice.ts",
        source="""\
import { Money } from "./money";
import type { Customer } from "../customers/customer";

/** Anything that can be billed. */
export interface Billable {
  amount(): Money;
}

export type InvoiceId = string;

export enum Status {
  Draft,
  Issued,
}

export class InvoiceService implements Billable {
  constructor(private readonly repo: InvoiceRepository) {}

  amount(): Money {
    return Money.zero();
  }

  async issue(id: InvoiceId): Promise<void> {
    const invoice = await this.repo.find(id);
    notify(invoice.customer);
  }
}

export const notify = (customer: Customer): void => {
  console.log(customer.email);
};

export function formatTotal(total: Money): string {
  return total.format();
}
""",
        chunks=[
            ("window", None, 1, 3),
            ("interface", "Billable", 4, 7),
            ("type", "InvoiceId", 9, 9),
            ("enum", "Status", 11, 14),
            ("class", "InvoiceService", 16, 27),
            ("function", "notify", 29, 31),
            ("function", "formatTotal", 33, 35),
        ],
        symbols=[
            ("Billable", "interface", 5, 7, None),
            ("amount", "method", 6, 6, "Billable"),
            ("InvoiceId", "type", 9, 9, None),
            ("Status", "enum", 11, 14, None),
            ("InvoiceService", "class", 16, 27, None),
            ("constructor", "method", 17, 17, "InvoiceService"),
            ("amount", "method", 19, 21, "InvoiceService"),
            ("issue", "method", 23, 26, "InvoiceService"),
            ("notify", "function", 29, 31, None),
            ("formatTotal", "function", 33, 35, None),
        ],
    ),
    Sample(
        path="web/src/components/List.tsx",
        source="""\
import React from "react";
import { Row } from "./Row";

type Props = { items: string[] };

export function ItemList({ items }: Props) {
  return (
    <ul>
      {items.map((item) => (
        <Row key={item} label={item} />
      ))}
    </ul>
  );
}

export default class Legacy extends React.Component<Props> {
  render() {
    return <ItemList items={this.props.items} />;
  }
}
""",
        chunks=[
            ("window", None, 1, 3),
            ("type", "Props", 4, 4),
            ("function", "ItemList", 6, 14),
            ("class", "Legacy", 16, 20),
        ],
        symbols=[
            ("Props", "type", 4, 4, None),
            ("ItemList", "function", 6, 14, None),
            ("Legacy", "class", 16, 20, None),
            ("render", "method", 17, 19, "Legacy"),
        ],
    ),
    Sample(
        path="server/index.js",
        source="""\
const express = require("express");
const { audit } = require("./audit");

class Router {
  constructor(app) {
    this.app = app;
  }

  mount(path, handler) {
    this.app.get(path, handler);
  }
}

function start(port) {
  const app = express();
  new Router(app).mount("/health", health);
  return app.listen(port);
}

const health = (req, res) => {
  audit("health");
  res.send("ok");
};

module.exports = { start };
""",
        chunks=[
            ("window", None, 1, 3),
            ("class", "Router", 4, 12),
            ("function", "start", 14, 18),
            ("function", "health", 20, 23),
            ("window", None, 24, 25),
        ],
        symbols=[
            ("Router", "class", 4, 12, None),
            ("constructor", "method", 5, 7, "Router"),
            ("mount", "method", 9, 11, "Router"),
            ("start", "function", 14, 18, None),
            ("health", "function", 20, 23, None),
        ],
    ),
    Sample(
        path="internal/store/store.go",
        source="""\
package store

import (
	"context"
	"fmt"

	"github.com/acme/billing/internal/money"
)

// Store keeps invoices.
type Store interface {
	Get(ctx context.Context, id string) (*Invoice, error)
}

// Invoice is an issued invoice.
type Invoice struct {
	ID    string
	Total money.Amount
}

func (s *memoryStore) Get(ctx context.Context, id string) (*Invoice, error) {
	inv, ok := s.items[id]
	if !ok {
		return nil, fmt.Errorf("invoice %s not found", id)
	}
	return inv, nil
}

func NewMemoryStore() *memoryStore {
	return &memoryStore{items: map[string]*Invoice{}}
}
""",
        chunks=[
            ("window", None, 1, 9),
            ("interface", "Store", 10, 13),
            ("struct", "Invoice", 15, 19),
            ("method", "Get", 21, 27),
            ("function", "NewMemoryStore", 29, 31),
        ],
        symbols=[
            ("Store", "interface", 11, 13, None),
            ("Get", "method", 12, 12, "Store"),
            ("Invoice", "struct", 16, 19, None),
            ("Get", "method", 21, 27, "memoryStore"),
            ("NewMemoryStore", "function", 29, 31, None),
        ],
    ),
    Sample(
        path="crates/ledger/src/lib.rs",
        source="""\
use std::collections::HashMap;
use crate::money::{Amount, Currency};

mod tax;

/// A ledger of balances.
#[derive(Debug, Default)]
pub struct Ledger {
    balances: HashMap<String, Amount>,
}

pub trait Account {
    fn balance(&self) -> Amount;
}

impl Ledger {
    pub fn credit(&mut self, who: &str, amount: Amount) {
        let entry = self.balances.entry(who.to_string()).or_default();
        *entry = entry.add(amount);
    }
}

pub enum Kind {
    Asset,
    Liability,
}

pub fn open() -> Ledger {
    Ledger::default()
}
""",
        chunks=[
            ("window", None, 1, 5),
            ("struct", "Ledger", 6, 10),
            ("trait", "Account", 12, 14),
            ("impl", "Ledger", 16, 21),
            ("enum", "Kind", 23, 26),
            ("function", "open", 28, 30),
        ],
        symbols=[
            ("Ledger", "struct", 8, 10, None),
            ("Account", "trait", 12, 14, None),
            ("balance", "method", 13, 13, "Account"),
            ("credit", "method", 17, 20, "Ledger"),
            ("Kind", "enum", 23, 26, None),
            ("open", "function", 28, 30, None),
        ],
    ),
    Sample(
        path="src/main/java/com/acme/orders/OrderService.java",
        source="""\
package com.acme.orders;

import java.util.List;
import java.util.Optional;
import com.acme.orders.repo.OrderRepository;

/** Places and finds orders. */
public class OrderService {
    private final OrderRepository repo;

    public OrderService(OrderRepository repo) {
        this.repo = repo;
    }

    public Optional<Order> find(String id) {
        return repo.findById(id);
    }

    public enum Priority { LOW, HIGH }
}

interface Auditable {
    void audit();
}
""",
        chunks=[
            ("window", None, 1, 6),
            ("class", "OrderService", 7, 20),
            ("interface", "Auditable", 22, 24),
        ],
        symbols=[
            ("OrderService", "class", 8, 20, None),
            ("OrderService", "method", 11, 13, "OrderService"),
            ("find", "method", 15, 17, "OrderService"),
            ("Priority", "enum", 19, 19, "OrderService"),
            ("Auditable", "interface", 22, 24, None),
            ("audit", "method", 23, 23, "Auditable"),
        ],
    ),
    Sample(
        path="src/main/kotlin/com/acme/users/User.kt",
        source="""\
package com.acme.users

import com.acme.users.repo.UserRepository
import kotlinx.coroutines.flow.Flow

/** A registered user. */
data class User(val id: String, val email: String)

interface UserService {
    fun find(id: String): User?
}

class DefaultUserService(private val repo: UserRepository) : UserService {
    override fun find(id: String): User? {
        return repo.load(id)
    }
}

fun greeting(user: User): String = "Hello " + user.email
""",
        chunks=[
            ("window", None, 1, 5),
            ("class", "User", 6, 7),
            ("interface", "UserService", 9, 11),
            ("class", "DefaultUserService", 13, 17),
            ("function", "greeting", 19, 19),
        ],
        symbols=[
            ("User", "class", 7, 7, None),
            ("UserService", "interface", 9, 11, None),
            ("find", "method", 10, 10, "UserService"),
            ("DefaultUserService", "class", 13, 17, None),
            ("find", "method", 14, 16, "DefaultUserService"),
            ("greeting", "function", 19, 19, None),
        ],
    ),
    Sample(
        path="src/queue.c",
        source="""\
#include <stdlib.h>
#include "queue.h"

/* A fixed-size ring buffer. */
typedef struct queue {
    int *items;
    size_t head;
} queue_t;

enum status { OK, FULL };

queue_t *queue_new(size_t size) {
    queue_t *q = malloc(sizeof(queue_t));
    q->items = calloc(size, sizeof(int));
    return q;
}

int queue_push(queue_t *q, int item) {
    q->items[q->head++] = item;
    return OK;
}
""",
        chunks=[
            ("window", None, 1, 3),
            ("struct", "queue_t", 4, 8),
            ("enum", "status", 10, 10),
            ("function", "queue_new", 12, 16),
            ("function", "queue_push", 18, 21),
        ],
        symbols=[
            ("queue", "struct", 5, 8, "queue_t"),
            ("queue_t", "struct", 5, 8, None),
            ("status", "enum", 10, 10, None),
            ("queue_new", "function", 12, 16, None),
            ("queue_push", "function", 18, 21, None),
        ],
    ),
    Sample(
        path="src/engine.cpp",
        source="""\
#include <vector>
#include "engine/engine.hpp"

namespace engine {

class Engine : public Base {
 public:
  explicit Engine(int workers);
  void run();

 private:
  std::vector<int> queue_;
};

void Engine::run() {
  for (auto job : queue_) {
    process(job);
  }
}

struct Config {
  int workers;
};

}  // namespace engine
""",
        chunks=[
            ("window", None, 1, 3),
            ("module", "engine", 4, 5),
            ("class", "Engine", 6, 13),
            ("method", "run", 15, 19),
            ("struct", "Config", 21, 23),
            ("module", "engine", 24, 25),
        ],
        symbols=[
            ("engine", "module", 4, 25, None),
            ("Engine", "class", 6, 13, "engine"),
            ("Engine", "method", 8, 8, "Engine"),
            ("run", "method", 9, 9, "Engine"),
            ("run", "method", 15, 19, "Engine"),
            ("Config", "struct", 21, 23, "engine"),
        ],
    ),
    Sample(
        path="src/Billing/InvoiceService.cs",
        source="""\
using System;
using System.Collections.Generic;

namespace Acme.Billing
{
    /// <summary>Issues invoices.</summary>
    public class InvoiceService : IInvoiceService
    {
        private readonly IRepository _repo;

        public InvoiceService(IRepository repo)
        {
            _repo = repo;
        }

        public Invoice Issue(Guid id)
        {
            var invoice = _repo.Load(id);
            return invoice.Issue();
        }
    }

    public interface IInvoiceService
    {
        Invoice Issue(Guid id);
    }
}
""",
        chunks=[
            ("window", None, 1, 3),
            ("module", "Acme.Billing", 4, 5),
            ("class", "InvoiceService", 6, 21),
            ("interface", "IInvoiceService", 23, 26),
        ],
        symbols=[
            ("Acme.Billing", "module", 4, 27, None),
            ("InvoiceService", "class", 7, 21, "Acme.Billing"),
            ("InvoiceService", "method", 11, 14, "InvoiceService"),
            ("Issue", "method", 16, 20, "InvoiceService"),
            ("IInvoiceService", "interface", 23, 26, "Acme.Billing"),
            ("Issue", "method", 25, 25, "IInvoiceService"),
        ],
    ),
    Sample(
        path="lib/billing/invoice.rb",
        source="""\
require "bigdecimal"
require_relative "tax_table"

module Billing
  # An issued invoice.
  class Invoice < Base
    def initialize(lines)
      @lines = lines
    end

    def total
      TaxTable.apply(subtotal)
    end

    def self.load(id)
      new(Repo.find(id))
    end
  end
end
""",
        chunks=[
            ("window", None, 1, 3),
            ("module", "Billing", 4, 4),
            ("class", "Invoice", 5, 18),
        ],
        symbols=[
            ("Billing", "module", 4, 19, None),
            ("Invoice", "class", 6, 18, "Billing"),
            ("initialize", "method", 7, 9, "Invoice"),
            ("total", "method", 11, 13, "Invoice"),
            ("load", "method", 15, 17, "Invoice"),
        ],
    ),
    Sample(
        path="app/Http/Controllers/InvoiceController.php",
        source="""\
<?php

namespace App\\Http\\Controllers;

use App\\Models\\Invoice;
use Illuminate\\Http\\Request;

/**
 * Shows invoices.
 */
class InvoiceController extends Controller
{
    public function show(Request $request, string $id)
    {
        $invoice = Invoice::findOrFail($id);
        return view('invoice', ['invoice' => $invoice]);
    }
}

function format_total(float $total): string
{
    return number_format($total, 2);
}
""",
        chunks=[
            ("window", None, 1, 7),
            ("class", "InvoiceController", 8, 18),
            ("function", "format_total", 20, 23),
        ],
        symbols=[
            ("InvoiceController", "class", 11, 18, None),
            ("show", "method", 13, 17, "InvoiceController"),
            ("format_total", "function", 20, 23, None),
        ],
    ),
    Sample(
        path="Sources/Shop/Cart.swift",
        source="""\
import Foundation

/// A shopping cart.
struct Cart {
    var items: [Item] = []

    mutating func add(_ item: Item) {
        items.append(item)
    }
}

protocol PriceProvider {
    func price(of item: Item) -> Decimal
}

final class Checkout {
    let provider: PriceProvider

    init(provider: PriceProvider) {
        self.provider = provider
    }

    func total(of cart: Cart) -> Decimal {
        cart.items.reduce(0) { $0 + provider.price(of: $1) }
    }
}
""",
        chunks=[
            ("window", None, 1, 2),
            ("struct", "Cart", 3, 10),
            ("interface", "PriceProvider", 12, 14),
            ("class", "Checkout", 16, 26),
        ],
        symbols=[
            ("Cart", "struct", 4, 10, None),
            ("add", "method", 7, 9, "Cart"),
            ("PriceProvider", "interface", 12, 14, None),
            ("price", "method", 13, 13, "PriceProvider"),
            ("Checkout", "class", 16, 26, None),
            ("init", "method", 19, 21, "Checkout"),
            ("total", "method", 23, 25, "Checkout"),
        ],
    ),
    Sample(
        path="src/main/scala/com/acme/ledger/Ledger.scala",
        source="""\
package com.acme.ledger

import scala.collection.mutable
import com.acme.money.Amount

/** Keeps balances. */
class Ledger(store: Store) {
  private val balances = mutable.Map.empty[String, Amount]

  def credit(who: String, amount: Amount): Unit = {
    balances.update(who, balances.getOrElse(who, Amount.zero) + amount)
  }
}

object Ledger {
  def empty(): Ledger = new Ledger(new MemoryStore())
}

trait Store {
  def load(id: String): Option[Amount]
}
""",
        chunks=[
            ("window", None, 1, 5),
            ("class", "Ledger", 6, 13),
            ("object", "Ledger", 15, 17),
            ("trait", "Store", 19, 21),
        ],
        symbols=[
            ("Ledger", "class", 7, 13, None),
            ("credit", "method", 10, 12, "Ledger"),
            ("Ledger", "object", 15, 17, None),
            ("empty", "method", 16, 16, "Ledger"),
            ("Store", "trait", 19, 21, None),
            ("load", "method", 20, 20, "Store"),
        ],
    ),
]


def test_every_parsed_language_has_a_sample() -> None:
    assert {detect_language(s.path) for s in SAMPLES} == PARSED_LANGUAGES


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.path.rsplit("/", 1)[-1] for s in SAMPLES])
def test_definitions_and_chunks(sample: Sample) -> None:
    analysis = analyze_file(sample.path, sample.source, detect_language(sample.path))
    assert analysis.parse_errors == 0
    assert [(c.kind, c.name, c.start_line, c.end_line) for c in analysis.chunks] == sample.chunks
    assert [(s.name, s.kind, s.start_line, s.end_line, s.parent) for s in analysis.symbols] == sample.symbols


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.path.rsplit("/", 1)[-1] for s in SAMPLES])
def test_chunk_content_is_exactly_its_lines(sample: Sample) -> None:
    lines = split_lines(sample.source)
    analysis = analyze_file(sample.path, sample.source, detect_language(sample.path))
    for chunk in analysis.chunks:
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
