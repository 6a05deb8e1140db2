package ui

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyMap is every key the main screen answers to. The F-keys follow htop
// (F3 search, F4 filter, F5 tree, F6 sort, F9 kill, F10 quit) so that an
// operator's fingers already know them.
type KeyMap struct {
	Up, Down         key.Binding
	PageUp, PageDown key.Binding
	Top, Bottom      key.Binding
	Collapse, Expand key.Binding
	ExpandAll        key.Binding
	// ScrollLeft and ScrollRight move the commands sideways, for argv
	// longer than the window; each is enabled only when it can move.
	ScrollLeft, ScrollRight key.Binding
	Details                 key.Binding
	Search, Filter          key.Binding
	Tree, Sort              key.Binding
	// SortMenu is htop's F6: a menu of the orders; s steps through them.
	SortMenu   key.Binding
	Reverse    key.Binding
	Host       key.Binding
	Tag, Untag key.Binding
	Copy       key.Binding
	Kill       key.Binding
	// KillNow ends a running teardown's grace: SIGKILL now.
	KillNow            key.Binding
	Refresh            key.Binding
	Faster, Slower     key.Binding
	SwitchFocus, Close key.Binding
	// ShowHelp and CloseHelp are one key, ?: only the one that applies is
	// enabled, so help names what pressing it will do.
	ShowHelp, CloseHelp key.Binding
	Quit                key.Binding
	// ForceQuit is ctrl+c, in every mode, text fields included.
	ForceQuit key.Binding
}

// DefaultKeyMap returns the default bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:         key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g/home", "first")),
		Bottom:      key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G/end", "last")),
		Collapse:    key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "collapse")),
		Expand:      key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "expand")),
		ExpandAll:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "expand/collapse all")),
		ScrollLeft:  key.NewBinding(key.WithKeys("<", "shift+left"), key.WithHelp("< shift+←", "scroll commands left"), key.WithDisabled()),
		ScrollRight: key.NewBinding(key.WithKeys(">", "shift+right"), key.WithHelp("> shift+→", "scroll commands right"), key.WithDisabled()),
		Details:     key.NewBinding(key.WithKeys("enter", "d"), key.WithHelp("enter/d", "details")),
		Search:      key.NewBinding(key.WithKeys("f3", "ctrl+s"), key.WithHelp("F3", "search")),
		Filter:      key.NewBinding(key.WithKeys("/", "f4"), key.WithHelp("/ F4", "filter")),
		Tree:        key.NewBinding(key.WithKeys("f5", "t"), key.WithHelp("F5/t", "tree view")),
		Sort:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "next sort")),
		SortMenu:    key.NewBinding(key.WithKeys("f6"), key.WithHelp("F6", "sort menu")),
		Reverse:     key.NewBinding(key.WithKeys("I"), key.WithHelp("I", "reverse sort")),
		Host:        key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "host processes")),
		Tag:         key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "tag")),
		Untag:       key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "clear tags")),
		Copy:        key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy ID")),
		Kill:        key.NewBinding(key.WithKeys("K", "f9"), key.WithHelp("K F9", "kill")),
		KillNow:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "SIGKILL now (end the grace)")),
		Refresh:     key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Faster:      key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Slower:      key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "slower")),
		SwitchFocus: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "focus pane/list")),
		Close:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close log")),
		ShowHelp:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "more keys")),
		CloseHelp:   key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "fewer keys"), key.WithDisabled()),
		Quit:        key.NewBinding(key.WithKeys("q", "f10"), key.WithHelp("q F10", "quit")),
		ForceQuit:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
}

// showingHelp enables the help key that applies: ? shows every key, or
// closes that view again.
func (k *KeyMap) showingHelp(all bool) {
	k.ShowHelp.SetEnabled(!all)
	k.CloseHelp.SetEnabled(all)
}

// readOnly disables every key that exists only to kill, so that help never
// shows them and key.Matches never fires for them.
func (k *KeyMap) readOnly() {
	for _, b := range k.killKeys() {
		b.SetEnabled(false)
	}
}

// killKeys are the bindings that lead to a teardown: tags exist only to
// pick kill targets.
func (k *KeyMap) killKeys() []*key.Binding {
	return []*key.Binding{&k.Kill, &k.Tag, &k.Untag, &k.KillNow}
}

// disabledKill reports whether msg is a kill key that read-only mode
// turned off; the app answers it with a one-line explanation.
func (k *KeyMap) disabledKill(msg tea.KeyMsg) bool {
	for _, b := range k.killKeys() {
		if !b.Enabled() && slices.Contains(b.Keys(), msg.String()) {
			return true
		}
	}
	return false
}

// ShortHelp is the one-line footer, the less important keys last: a narrow
// window drops them first and always keeps the last two (footer).
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Expand, k.Details, k.Kill, k.Filter, k.Tag, k.Sort, k.ShowHelp, k.Quit}
}

// footerKept is how many of the last ShortHelp keys always show.
const footerKept = 2

// FullHelp is what `?` shows, one column per kind of key.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Expand, k.Collapse, k.ExpandAll, k.Details, k.Tree, k.Host, k.Copy, k.ScrollLeft, k.ScrollRight},
		{k.Filter, k.Search, k.Sort, k.SortMenu, k.Reverse, k.Refresh, k.Faster, k.Slower},
		{k.Tag, k.Untag, k.Kill, k.KillNow, k.SwitchFocus, k.CloseHelp, k.Quit},
	}
}

// panelKeys is the help shown while the teardown log has the focus.
type panelKeys struct {
	KeyMap
	running bool
}

func (k panelKeys) ShortHelp() []key.Binding {
	if k.running {
		return []key.Binding{k.SwitchFocus, k.Up, k.Down, k.PageUp, k.PageDown, k.Quit}
	}
	return []key.Binding{k.SwitchFocus, k.Close, k.Up, k.Down, k.PageUp, k.PageDown, k.Quit}
}

func (k panelKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// inputKeys is the help shown while the filter or search line is open.
type inputKeys struct {
	Accept, Cancel, Next key.Binding
}

func newInputKeys(search bool) inputKeys {
	k := inputKeys{
		Accept: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep")),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear")),
		Next:   key.NewBinding(key.WithKeys("f3", "ctrl+n", "down"), key.WithHelp("F3/↓", "next match")),
	}
	if search {
		k.Accept.SetHelp("enter", "done")
		k.Cancel.SetHelp("esc", "done")
	} else {
		k.Next.SetEnabled(false)
	}
	return k
}

func (k inputKeys) ShortHelp() []key.Binding { return []key.Binding{k.Accept, k.Cancel, k.Next} }

func (k inputKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// confirmKeys drive the kill confirmation.
type confirmKeys struct {
	Yes, No, Strategy, Focus, Press key.Binding
	// Up, Down, PageUp and PageDown scroll the list of targets.
	Up, Down, PageUp, PageDown key.Binding
	// WithCgroup includes the suspects: processes outside the tree in
	// its cgroups that may have started inside it.
	WithCgroup key.Binding
}

func newConfirmKeys(typed bool) confirmKeys {
	k := confirmKeys{
		Yes:        key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "tear down")),
		No:         key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "cancel")),
		Strategy:   key.NewBinding(key.WithKeys("t", "ctrl+t"), key.WithHelp("t", "graceful/immediate")),
		Focus:      key.NewBinding(key.WithKeys("tab", "shift+tab", "left", "right"), key.WithHelp("tab", "focus")),
		Press:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "press")),
		Up:         key.NewBinding(key.WithKeys("up"), key.WithHelp("↑↓ pgup pgdn", "scroll")),
		Down:       key.NewBinding(key.WithKeys("down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown")),
		WithCgroup: key.NewBinding(key.WithKeys("w", "ctrl+w"), key.WithHelp("w", "include suspects")),
	}
	if typed {
		// Letters go to the text field, so only control keys act.
		k.Yes.SetEnabled(false)
		k.No.SetKeys("esc")
		k.No.SetHelp("esc", "cancel")
		k.Strategy.SetKeys("ctrl+t")
		k.Strategy.SetHelp("ctrl+t", "graceful/immediate")
		k.Focus.SetKeys("tab", "shift+tab")
		k.WithCgroup.SetKeys("ctrl+w")
		k.WithCgroup.SetHelp("ctrl+w", "include suspects")
	}
	return k
}

func (k confirmKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Yes, k.No, k.Up, k.Strategy, k.WithCgroup, k.Focus, k.Press}
}

// scrollable enables the scroll keys (and their help) only when the list
// of targets is longer than its window.
func (k *confirmKeys) scrollable(on bool) {
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.PageUp, &k.PageDown} {
		b.SetEnabled(on)
	}
}

func (k confirmKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }
