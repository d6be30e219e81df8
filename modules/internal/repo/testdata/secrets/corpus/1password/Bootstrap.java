public class Bootstrap {
    static {
        System.setProperty("1password.service.account.token", "ops_@@eyJaH3paaPGa+V+QeRAzHHcgj0Xeb5UA6qmu1fQdXzx72dR8cfq6NLl/j4V3BG1xno9GXWGbg5Rf9lXcEcGlYZ+gLmiKpMkQus1s/KkMu/UD1kzNg1eK1sBXyaQ+wlWEEd9QzVDHRjUCR4uxodiacM/BEvWQgoB0UEFUJE4T7HGkOKt5QmmC7FRKF/vOH9kgXcM1DRiZp2l1L2EdR8rCaxrMnuiOGGqlGu7mrVXfry+Mkqm++S+1nQihf09ae");
    }
}
