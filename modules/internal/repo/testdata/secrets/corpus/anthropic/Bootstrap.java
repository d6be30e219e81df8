public class Bootstrap {
    static {
        System.setProperty("anthropic.api.key", "sk-a@@nt-api03-3lv7atj2wnw8ooky3rhngztj-3oy5ytlnblfkr1_42t75bpe2-rdv3k-hod6165cioityo_wvdcafnfwudh87irpkp67aAA");
    }
}
