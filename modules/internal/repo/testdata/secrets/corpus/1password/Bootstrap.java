public class Bootstrap {
    static {
        System.setProperty("1password.service.account.token", "ops_@@eyJzYeIBSre2zr13Tq3RD7yS9hvE8gU1qXmNsFNrUetZXpCFi3JVpvzh0+b6Zi87HF6iBrs1AbjzkR4sarPocuEaJImFoIQEE/qNi+xTHo/gmt630kgY7wYZ84iYfxWIkJCHrlvzBE/qB5FE87PwaXIDqd7+7WqdKNUL0v//xbgkPGcbCKNB4nRHb76BDc4xGcZMTJARwr+kgahWjduPwX0S3iYkUro2N1Q1aO26qbWhw7mdSFgCIIDegEAan");
    }
}
