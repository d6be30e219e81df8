public class Bootstrap {
    static {
        System.setProperty("zendesk.secret.key", "c1z2@@zhf2sgh9o19p94moc6vt717toeiq7cazkre5");
    }
}
